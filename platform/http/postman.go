package http

import "strings"

// postman builds a Postman collection (v2.1) from the same route table as
// the OpenAPI document.
func (s *Server) postman() map[string]any {
	folders := map[string][]any{}
	var order []string
	for _, r := range s.table.routes {
		var segs []any
		for _, p := range strings.Split(strings.Trim(r.FullPath(), "/"), "/") {
			if strings.HasPrefix(p, "{") {
				p = ":" + strings.Trim(p, "{}")
			}
			segs = append(segs, p)
		}
		req := map[string]any{
			"method": r.Method,
			"url": map[string]any{
				"raw":  "{{base_url}}" + r.FullPath(),
				"host": []any{"{{base_url}}"},
				"path": segs,
			},
			"description": r.Summary,
		}
		var headers []any
		for _, a := range r.Auth {
			tok := map[Auth]string{AuthAdmin: "{{admin_token}}", AuthSiteSecret: "{{secret}}", AuthMobile: "{{mobile_secret}}", AuthCredential: "{{credential}}"}[a]
			if tok != "" {
				headers = append(headers, map[string]any{"key": "Authorization", "value": "Bearer " + tok})
				break
			}
		}
		if r.Body != nil {
			headers = append(headers, map[string]any{"key": "Content-Type", "value": "application/json"})
			req["body"] = map[string]any{"mode": "raw", "raw": example(r.Body), "options": map[string]any{"raw": map[string]any{"language": "json"}}}
		}
		if headers != nil {
			req["header"] = headers
		}
		if _, ok := folders[r.Tag]; !ok {
			order = append(order, r.Tag)
		}
		folders[r.Tag] = append(folders[r.Tag], map[string]any{"name": r.ID, "request": req})
	}
	var items []any
	for _, tag := range order {
		items = append(items, map[string]any{"name": tag, "item": folders[tag]})
	}
	return map[string]any{
		"info": map[string]any{
			"name":        "trustd " + ContractVersion + "+" + Build,
			"_postman_id": "trustd-" + ContractVersion + "+" + Build,
			"schema":      "https://schema.getpostman.com/json/collection/v2.1.0/collection.json",
		},
		"item": items,
		"variable": []any{
			map[string]any{"key": "base_url", "value": s.cfg.BaseURL},
			map[string]any{"key": "admin_token", "value": ""},
			map[string]any{"key": "secret", "value": ""},
			map[string]any{"key": "mobile_secret", "value": ""},
			map[string]any{"key": "credential", "value": ""},
		},
	}
}
