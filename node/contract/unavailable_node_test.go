package contract_test

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/png"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/trustd/trustd/node/nodetest"
)

// TestEveryServiceUnavailableCarriesRetryAfter provokes the two shapes of
// a 503 service-unavailable on a real node, the ApiError body (a sandbox
// document screening's simulated outage) and the spec's own
// {success,error} body (the sandbox siteverify's service_error scenario):
// each carries Retry-After, 1 second by default, as the contract declares
// on every 503 response.
func TestEveryServiceUnavailableCarriesRetryAfter(t *testing.T) {
	tn := nodetest.Start(t)
	var ws wsView
	tn.MustCreate("/workspaces", map[string]any{"name": "retry"}, &ws)
	var sbx siteView
	tn.MustCreate("/workspaces/"+ws.WorkspaceID+"/sites", map[string]any{"name": "sbx", "hostnames": []string{"localhost"}, "environment": "sandbox"}, &sbx)

	t.Run("an ApiError 503 carries Retry-After", func(t *testing.T) {
		var img bytes.Buffer
		if err := png.Encode(&img, image.NewGray(image.Rect(0, 0, 400, 400))); err != nil {
			t.Fatal(err)
		}
		r := tn.Do("POST", "/v1/documents/verify", "", map[string]any{"secret": sbx.Secret, "country": "ZZU",
			"document_type": "passport", "front_image": base64.StdEncoding.EncodeToString(img.Bytes())})
		r.Want(t, 503, "service-unavailable")
		if got := r.Header.Get("Retry-After"); got != "1" {
			t.Fatalf("Retry-After %q, want 1", got)
		}
	})

	t.Run("a 503 in the spec's own shape carries Retry-After", func(t *testing.T) {
		r := tn.Do("POST", "/v1/sandbox/issue", "", map[string]any{"site_key": sbx.SiteKey, "scenario": "service_error",
			"action": "login", "hostname": "localhost"})
		var issued struct {
			Token string `json:"token"`
		}
		if r.Status != 200 {
			t.Fatalf("sandbox issue: %d %s", r.Status, r.Body)
		}
		r.Decode(t, &issued)
		r = tn.Do("POST", "/v1/sandbox/siteverify", "", map[string]any{"secret": sbx.Secret, "response": issued.Token})
		if r.Status != 503 || string(r.Body) != `{"success":false,"error":"service-unavailable"}` {
			t.Fatalf("sandbox siteverify: %d %s", r.Status, r.Body)
		}
		if got := r.Header.Get("Retry-After"); got != "1" {
			t.Fatalf("Retry-After %q, want 1", got)
		}
	})

	// The contract changed deliberately here (changelog): every 503
	// response of every operation declares Retry-After, and no other error
	// status but 429 does.
	t.Run("the contract declares Retry-After on every 503 response", func(t *testing.T) {
		var doc struct {
			Paths map[string]map[string]struct {
				Responses map[string]struct {
					Headers map[string]any `json:"headers"`
				} `json:"responses"`
			} `json:"paths"`
		}
		r := tn.Do("GET", "/v1/openapi.json", "", nil)
		if err := json.Unmarshal(r.Body, &doc, json.RejectUnknownMembers(false)); err != nil {
			t.Fatal(err)
		}
		with503 := 0
		for path, item := range doc.Paths {
			for method, op := range item {
				for st, resp := range op.Responses {
					_, has := resp.Headers["Retry-After"]
					switch {
					case st == "503":
						with503++
						if !has {
							t.Errorf("%s %s: the 503 response does not declare Retry-After", strings.ToUpper(method), path)
						}
					case st != "429" && has:
						t.Errorf("%s %s: the %s response declares Retry-After", strings.ToUpper(method), path, st)
					}
				}
			}
		}
		if with503 < 20 {
			t.Fatalf("only %d operations document a 503", with503)
		}
	})
}
