// Package faketrustd is a small in-memory stand-in for the parts of trustd's
// API that trustbench calls (admin workspaces, sites and policies, the
// rate-limit check, the challenge protocol and siteverify), so the load tool
// can be tested end to end without the real server. It implements the wire
// shapes, not trustd's semantics: one fixed-window counter per policy and
// subject, tokens valid once. It is for tests only.
package faketrustd

import (
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Iterations is the PBKDF2 iteration count of the fake's challenges: low, so
// tests mint quickly.
const Iterations = 64

// Server is a running fake.
type Server struct {
	URL   string
	Token string

	mu         sync.Mutex
	workspaces map[string]string    // id → name
	sites      map[string]*site     // secret → site
	siteKeys   map[string]*site     // site key → site
	policies   map[string][]policy  // workspace → policies
	used       map[string]int64     // policy|subject → tokens used
	challenges map[string]challenge // id → challenge
	tokens     map[string]string    // token → secret, deleted once verified
	deleted    []string
}

type site struct {
	ws, key, secret string
	difficulty      int
}

type policy struct {
	id       string
	scope    string
	capacity int64
}

type challenge struct {
	salt []byte
	site *site
}

// Start starts a fake on 127.0.0.1 that accepts token as the admin token;
// it is closed when the test ends.
func Start(t testing.TB, token string) *Server {
	t.Helper()
	s := &Server{
		Token:      token,
		workspaces: map[string]string{},
		sites:      map[string]*site{},
		siteKeys:   map[string]*site{},
		policies:   map[string][]policy{},
		used:       map[string]int64{},
		challenges: map[string]challenge{},
		tokens:     map[string]string{},
	}
	ts := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(ts.Close)
	s.URL = ts.URL
	return s
}

// Workspaces returns the ids of the workspaces that exist.
func (s *Server) Workspaces() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id := range s.workspaces {
		ids = append(ids, id)
	}
	return ids
}

// Deleted returns the ids of deleted workspaces, in order.
func (s *Server) Deleted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.deleted...)
}

func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func reply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if v != nil {
		_ = json.NewEncoder(w).Encode(v)
	}
}

func bearer(r *http.Request) string {
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	path := strings.Trim(r.URL.Path, "/")
	parts := strings.Split(path, "/")
	switch {
	case strings.HasPrefix(path, "admin/v1/"):
		if bearer(r) != s.Token {
			reply(w, 401, map[string]string{"error": "unauthorized"})
			return
		}
		s.admin(w, r, parts[2:])
	case path == "v1/rate-limit/check":
		s.check(w, r)
	case path == "v1/challenge":
		s.challenge(w, r)
	case path == "v1/challenge/redeem":
		s.redeem(w, r)
	case path == "v1/siteverify":
		s.siteverify(w, r)
	default:
		reply(w, 404, nil)
	}
}

func (s *Server) admin(w http.ResponseWriter, r *http.Request, p []string) {
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	switch {
	case len(p) == 1 && r.Method == "POST":
		id := randomID()
		name, _ := body["name"].(string)
		s.workspaces[id] = name
		reply(w, 201, map[string]any{"workspace_id": id, "name": name, "settings": map[string]any{}})
	case len(p) == 2 && r.Method == "DELETE":
		if _, ok := s.workspaces[p[1]]; !ok {
			reply(w, 404, nil)
			return
		}
		delete(s.workspaces, p[1])
		s.deleted = append(s.deleted, p[1])
		w.WriteHeader(204)
	case len(p) == 3 && p[2] == "sites" && r.Method == "POST":
		diff, _ := body["challenge_difficulty"].(float64)
		st := &site{ws: p[1], key: "sk_" + randomID(), secret: "ss_" + randomID(), difficulty: int(diff)}
		s.sites[st.secret], s.siteKeys[st.key] = st, st
		reply(w, 201, map[string]any{"site_id": randomID(), "site_key": st.key, "secret": st.secret})
	case len(p) == 3 && p[2] == "rate-limit-policies" && r.Method == "POST":
		b, _ := body["bucket"].(map[string]any)
		capacity, _ := b["capacity"].(float64)
		scope, _ := body["scope"].(string)
		pol := policy{id: randomID(), scope: scope, capacity: int64(capacity)}
		s.policies[p[1]] = append(s.policies[p[1]], pol)
		reply(w, 201, map[string]any{"policy_id": pol.id})
	default:
		reply(w, 404, nil)
	}
}

func (s *Server) check(w http.ResponseWriter, r *http.Request) {
	st, ok := s.sites[bearer(r)]
	if !ok {
		reply(w, 401, map[string]any{"success": false})
		return
	}
	var req struct {
		Subject string `json:"subject_id"`
		Device  string `json:"device_id"`
	}
	if json.NewDecoder(r.Body).Decode(&req) != nil || req.Subject == "" {
		reply(w, 400, map[string]any{"success": false})
		return
	}
	decision := "allow"
	for _, p := range s.policies[st.ws] {
		key := p.id + "|" + map[string]string{"subject": req.Subject, "device": req.Device}[p.scope]
		if s.used[key] >= p.capacity {
			decision = "throttle"
			continue
		}
		s.used[key]++
	}
	reply(w, 200, map[string]any{"success": true, "decision_id": randomID(), "allowed": decision == "allow",
		"decision": decision, "recommended_decision": decision, "remaining": 0, "reason_codes": []string{}})
}

func (s *Server) challenge(w http.ResponseWriter, r *http.Request) {
	var req struct {
		SiteKey string `json:"sitekey"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	st, ok := s.siteKeys[req.SiteKey]
	if !ok || r.Header.Get("Origin") != "http://bench.local" {
		reply(w, 403, map[string]any{"success": false})
		return
	}
	id, salt := randomID(), []byte(randomID())
	s.challenges[id] = challenge{salt: salt, site: st}
	reply(w, 200, map[string]any{"challenge": id, "challenge_type": "checkbox", "expires_in": 120,
		"pow": map[string]any{"algorithm": "pbkdf2-sha256", "salt": base64.RawURLEncoding.EncodeToString(salt),
			"iterations": Iterations, "difficulty": st.difficulty}})
}

func (s *Server) redeem(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Challenge string `json:"challenge"`
		Nonce     string `json:"nonce"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	ch, ok := s.challenges[req.Challenge]
	n, err := strconv.Atoi(req.Nonce)
	if !ok || err != nil {
		reply(w, 400, map[string]any{"success": false})
		return
	}
	delete(s.challenges, req.Challenge)
	dk, _ := pbkdf2.Key(sha256.New, strconv.Itoa(n), ch.salt, Iterations, 32)
	zeros := 0
	for _, b := range dk {
		if b != 0 {
			for b&0x80 == 0 {
				zeros++
				b <<= 1
			}
			break
		}
		zeros += 8
	}
	if zeros < ch.site.difficulty {
		reply(w, 400, map[string]any{"success": false, "error-codes": []string{"invalid-solution"}})
		return
	}
	tok := "tok_" + randomID()
	s.tokens[tok] = ch.site.secret
	reply(w, 200, map[string]any{"success": true, "token": tok, "expires_in": 300})
}

func (s *Server) siteverify(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Secret   string `json:"secret"`
		Response string `json:"response"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	if secret, ok := s.tokens[req.Response]; ok && secret == req.Secret {
		delete(s.tokens, req.Response)
		reply(w, 200, map[string]any{"success": true, "error-codes": []string{}})
		return
	}
	reply(w, 200, map[string]any{"success": false, "error-codes": []string{"timeout-or-duplicate"}})
}
