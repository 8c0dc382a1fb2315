// Package provision creates, through trustd's admin API, the workspace, site
// and rate-limit policies a bench run needs, and deletes the workspace again.
// It owns only what it created: it never lists, edits or deletes anything
// else, so a bench run cannot damage a real workspace.
package provision

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// ErrNoToken is returned when no admin token was given by flag, environment
// or credentials file.
var ErrNoToken = errors.New("provision: no admin token (use --admin-token, TRUSTD_ADMIN_TOKEN or --credentials)")

// StatusError is an admin API answer with an unexpected status.
type StatusError struct {
	Op   string
	Code int
	Body string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("provision: %s: HTTP %d: %s", e.Op, e.Code, e.Body)
}

// Credentials is what `trustd --dev` writes to data/dev-credentials.json.
type Credentials struct {
	AdminToken string `json:"admin_token"`
	APIBase    string `json:"api_base"`
}

// ReadCredentials reads a credentials file.
func ReadCredentials(path string) (Credentials, error) {
	var c Credentials
	b, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("provision: credentials: %w", err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("provision: credentials %s: %w", path, err)
	}
	c.APIBase = NodeRoot(c.APIBase)
	return c, nil
}

// NodeRoot turns an API base as trustd announces it (http://host:port/v1)
// into the node's root URL, which the load generator and the admin client
// add their own paths to.
func NodeRoot(base string) string {
	return strings.TrimSuffix(strings.TrimRight(base, "/"), "/v1")
}

// Admin is a client of the admin API of one node.
type Admin struct {
	base  string
	token string
	hc    *http.Client
}

// NewAdmin returns a client for the node at base (e.g. http://127.0.0.1:8080).
func NewAdmin(base, token string) (*Admin, error) {
	if token == "" {
		return nil, ErrNoToken
	}
	return &Admin{base: strings.TrimRight(base, "/"), token: token, hc: &http.Client{Timeout: 30 * time.Second}}, nil
}

func (a *Admin) call(ctx context.Context, op, method, path string, in, out any, want int) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("provision: %s: %w", op, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, body)
	if err != nil {
		return fmt.Errorf("provision: %s: %w", op, err)
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return fmt.Errorf("provision: %s: %w", op, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("provision: %s: read answer: %w", op, err)
	}
	if resp.StatusCode != want {
		return &StatusError{Op: op, Code: resp.StatusCode, Body: strings.TrimSpace(string(b[:min(len(b), 300)]))}
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("provision: %s: decode %q: %w", op, b, err)
		}
	}
	return nil
}

// Workspace is a created workspace.
type Workspace struct {
	ID   string `json:"workspace_id"`
	Name string `json:"name"`
}

// Site is a created site; Secret is only ever returned at creation.
type Site struct {
	ID      string `json:"site_id"`
	SiteKey string `json:"site_key"`
	Secret  string `json:"secret"`
}

// SiteSpec is the body of a site creation.
type SiteSpec struct {
	Name                string   `json:"name"`
	Hostnames           []string `json:"hostnames"`
	Environment         string   `json:"environment"`
	ChallengeMode       string   `json:"challenge_mode"`
	ChallengeDifficulty int      `json:"challenge_difficulty"`
	// TokenTTLSeconds is the response tokens' lifetime (30 to 3600; 0:
	// the service's default, 300).
	TokenTTLSeconds int `json:"token_ttl_seconds,omitempty"`
}

// BenchHost is the hostname of the bench site; challenges are requested
// with Origin http://BenchHost.
const BenchHost = "bench.local"

// BenchSite is the site every bench run creates: checkbox challenges at the
// lowest difficulty, so minting tokens costs the client little, and tokens
// that live the longest lifetime the service allows (an hour): a small
// machine mints tens of thousands of tokens slower than the default 300 s,
// and a token that expired before its turn would count as a verify failure
// of the run rather than of the service.
var BenchSite = SiteSpec{Name: "bench", Hostnames: []string{BenchHost}, Environment: "production", ChallengeMode: "checkbox",
	ChallengeDifficulty: 1, TokenTTLSeconds: BenchTokenTTLSeconds}

// BenchTokenTTLSeconds is the bench site's token lifetime.
const BenchTokenTTLSeconds = 3600

// Bucket is a policy's token bucket.
type Bucket struct {
	Capacity              int64 `json:"capacity"`
	RefillAmount          int64 `json:"refill_amount"`
	RefillIntervalSeconds int64 `json:"refill_interval_seconds"`
}

// PolicySpec is the body of a rate-limit policy creation.
type PolicySpec struct {
	Name              string            `json:"name"`
	Target            map[string]string `json:"target"`
	ActionPattern     string            `json:"action_pattern"`
	Method            string            `json:"method"`
	Scope             string            `json:"scope"`
	Bucket            Bucket            `json:"bucket"`
	DefaultCost       int64             `json:"default_cost"`
	Mode              string            `json:"mode"`
	DegradedBehaviour string            `json:"degraded_behaviour"`
}

// BenchPolicy is a workspace-wide policy matching "bench.*" with the given
// scope (subject, device or workspace) and a bucket of capacity tokens
// refilled fully every second.
func BenchPolicy(scope string, capacity int64) PolicySpec {
	return PolicySpec{
		Name:              "bench-" + scope,
		Target:            map[string]string{"type": "workspace"},
		ActionPattern:     "bench.*",
		Method:            "*",
		Scope:             scope,
		Bucket:            Bucket{Capacity: capacity, RefillAmount: capacity, RefillIntervalSeconds: 1},
		DefaultCost:       1,
		Mode:              "enforce",
		DegradedBehaviour: "fail_open",
	}
}

// CreateWorkspace creates a workspace called name.
func (a *Admin) CreateWorkspace(ctx context.Context, name string) (Workspace, error) {
	var w Workspace
	err := a.call(ctx, "create workspace", http.MethodPost, "/admin/v1/workspaces", map[string]string{"name": name}, &w, http.StatusCreated)
	if err == nil && w.ID == "" {
		err = fmt.Errorf("provision: create workspace: answer has no workspace_id")
	}
	return w, err
}

// DeleteWorkspace deletes a workspace and everything in it.
func (a *Admin) DeleteWorkspace(ctx context.Context, id string) error {
	return a.call(ctx, "delete workspace", http.MethodDelete, "/admin/v1/workspaces/"+id, nil, nil, http.StatusNoContent)
}

// CreateSite creates a site in workspace ws.
func (a *Admin) CreateSite(ctx context.Context, ws string, spec SiteSpec) (Site, error) {
	var s Site
	err := a.call(ctx, "create site", http.MethodPost, "/admin/v1/workspaces/"+ws+"/sites", spec, &s, http.StatusCreated)
	if err == nil && (s.SiteKey == "" || s.Secret == "") {
		err = fmt.Errorf("provision: create site: answer lacks site_key or secret")
	}
	return s, err
}

// CreatePolicy creates a rate-limit policy in workspace ws and returns its id.
func (a *Admin) CreatePolicy(ctx context.Context, ws string, spec PolicySpec) (string, error) {
	var p struct {
		ID string `json:"policy_id"`
	}
	err := a.call(ctx, "create policy "+spec.Name, http.MethodPost, "/admin/v1/workspaces/"+ws+"/rate-limit-policies", spec, &p, http.StatusCreated)
	return p.ID, err
}

// Env is what a run was given to work in.
type Env struct {
	Workspace Workspace
	Site      Site
	Policies  []string
}

// Setup creates a "bench-<random>" workspace with the bench site and the
// given policies. On failure it deletes what it created and returns the
// error; on success the caller must call Teardown.
func (a *Admin) Setup(ctx context.Context, policies []PolicySpec) (*Env, error) {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	ws, err := a.CreateWorkspace(ctx, "bench-"+hex.EncodeToString(rnd[:]))
	if err != nil {
		return nil, err
	}
	env := &Env{Workspace: ws}
	fail := func(err error) (*Env, error) {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		defer cancel()
		return nil, errors.Join(err, a.DeleteWorkspace(cctx, ws.ID))
	}
	if env.Site, err = a.CreateSite(ctx, ws.ID, BenchSite); err != nil {
		return fail(err)
	}
	for _, p := range policies {
		id, err := a.CreatePolicy(ctx, ws.ID, p)
		if err != nil {
			return fail(err)
		}
		env.Policies = append(env.Policies, id)
	}
	return env, nil
}

// Teardown deletes the run's workspace. It does not use the run's context,
// which is usually cancelled by then (Ctrl-C), but its own 15 s limit.
func (a *Admin) Teardown(env *Env) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return a.DeleteWorkspace(ctx, env.Workspace.ID)
}
