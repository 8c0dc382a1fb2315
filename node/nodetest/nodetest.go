// Package nodetest starts a real single trustd node on loopback ports with
// a temporary data directory, for the node tests of any area, and gives a
// small client for it. Every answer to a documented operation is checked
// against the node's own /openapi.json, so a test that provokes an answer
// the contract does not describe fails. It is the one such helper: the
// node tests of node/contract, of every area and of deploy/ use it as is,
// with no wrapper of their own. It is imported by tests only.
package nodetest

import (
	"bytes"
	"context"
	"io"
	nethttp "net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	validatorerrors "github.com/pb33f/libopenapi-validator/errors"

	"github.com/trustd/trustd/node"
	"github.com/trustd/trustd/platform/cluster/clustertest"
)

// Node is a started node and its client.
type Node struct {
	T   testing.TB
	N   *node.Node
	Cfg node.Config
	// validator is the contract of this node's build, shared by every node
	// that serves the same text.
	validator *lockedValidator
}

// Config is a single node's configuration on free loopback ports in a
// temporary directory, changed by mutate.
func Config(t testing.TB, mutate ...func(*node.Config)) node.Config {
	cfg := node.Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", FastRaft: true}
	for _, m := range mutate {
		m(&cfg)
	}
	return cfg
}

// Start starts a node with Config(t, mutate...); it stops when the test
// ends.
func Start(t testing.TB, mutate ...func(*node.Config)) *Node {
	t.Helper()
	return StartConfig(t, Config(t, mutate...))
}

// StartConfig starts a node with cfg (a restart over the same data
// directory, for example); it stops when the test ends.
func StartConfig(t testing.TB, cfg node.Config) *Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := node.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	tn := &Node{T: t, N: n, Cfg: cfg}
	t.Cleanup(tn.Stop)
	return tn
}

// Stop closes the node (again: nothing).
func (tn *Node) Stop() {
	if tn.N == nil {
		return
	}
	// Generous: under -race on a starved 2-core machine a handler still
	// running can take seconds to finish.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tn.N.Close(ctx); err != nil {
		tn.T.Errorf("close node: %v", err)
	}
	tn.N = nil
}

// Response is an answer.
type Response struct {
	Status int
	Header nethttp.Header
	Body   []byte
}

// Decode decodes the body into v (unknown members allowed).
func (r Response) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v, json.RejectUnknownMembers(false)); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// ErrorCode is the error member of an ApiError body.
func (r Response) ErrorCode(t testing.TB) string {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	r.Decode(t, &e)
	return e.Error
}

// Want fails the test unless the answer is status with error code.
func (r Response) Want(t testing.TB, status int, code string) {
	t.Helper()
	if r.Status != status || r.ErrorCode(t) != code {
		t.Fatalf("got %d %s, want %d %s", r.Status, r.Body, status, code)
	}
}

// Do sends a request; body may be nil, a string or []byte (sent as is) or
// a value encoded as JSON; headers are name, value pairs.
func (tn *Node) Do(method, path, token string, body any, headers ...string) Response {
	tn.T.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewReader([]byte(b))
	case []byte:
		rd = bytes.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			tn.T.Fatal(err)
		}
		rd = bytes.NewReader(enc)
	}
	req, err := nethttp.NewRequest(method, tn.N.APIURL()+path, rd)
	if err != nil {
		tn.T.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		tn.T.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	tn.CheckContract(req, resp, b)
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// Admin sends an admin request (path under /admin/v1) with the admin
// token.
func (tn *Node) Admin(method, path string, body any) Response {
	tn.T.Helper()
	return tn.Do(method, "/admin/v1"+path, tn.N.AdminToken(), body)
}

// MustCreate posts body to the admin path and decodes the 201 answer into
// out.
func (tn *Node) MustCreate(path string, body, out any) {
	tn.T.Helper()
	r := tn.Admin("POST", path, body)
	if r.Status != 201 {
		tn.T.Fatalf("POST %s: %d %s", path, r.Status, r.Body)
	}
	r.Decode(tn.T, out)
}

// Tenant is a workspace with a site (hostname shop.example) and a
// credential of scope site.verify.
type Tenant struct {
	WorkspaceID, SiteID, SiteKey, Secret, Credential string
}

// MustTenant creates a Tenant called name.
func (tn *Node) MustTenant(name string) Tenant {
	tn.T.Helper()
	var ws struct {
		WorkspaceID string `json:"workspace_id"`
	}
	tn.MustCreate("/workspaces", map[string]any{"name": name}, &ws)
	var site struct {
		SiteID  string `json:"site_id"`
		SiteKey string `json:"site_key"`
		Secret  string `json:"secret"`
	}
	tn.MustCreate("/workspaces/"+ws.WorkspaceID+"/sites", map[string]any{"name": "shop", "hostnames": []string{"shop.example"}}, &site)
	var cred struct {
		Credential string `json:"credential"`
	}
	tn.MustCreate("/workspaces/"+ws.WorkspaceID+"/credentials", map[string]any{"name": "srv", "scopes": []string{"site.verify"}}, &cred)
	return Tenant{WorkspaceID: ws.WorkspaceID, SiteID: site.SiteID, SiteKey: site.SiteKey, Secret: site.Secret, Credential: cred.Credential}
}

// CheckContract validates an answer of a documented operation against the
// node's own /openapi.json.
func (tn *Node) CheckContract(req *nethttp.Request, resp *nethttp.Response, body []byte) {
	tn.T.Helper()
	if !strings.HasPrefix(req.URL.Path, "/v1/") && !strings.HasPrefix(req.URL.Path, "/admin/v1/") {
		return
	}
	if resp.StatusCode == 404 || resp.StatusCode == 405 || req.URL.Path == "/v1/openapi.json" {
		return
	}
	if tn.validator == nil {
		r, err := nethttp.Get(tn.N.APIURL() + "/v1/openapi.json")
		if err != nil {
			tn.T.Fatal(err)
		}
		spec, _ := io.ReadAll(r.Body)
		r.Body.Close()
		tn.validator = contractValidator(tn.T, bytes.ReplaceAll(spec, []byte(tn.N.APIURL()), []byte("http://127.0.0.1")))
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if ok, errs := tn.validator.validate(req, resp); !ok {
		for _, e := range errs {
			tn.T.Errorf("%s %s → %d does not match the contract: %s %s %v", req.Method, req.URL.Path, resp.StatusCode, e.Message, e.Reason, e.SchemaValidationErrors)
		}
	}
}

// contractValidators caches one validator per contract text: compiling
// every schema of the contract takes seconds (tens under -race), and every
// node of one build serves the same contract. The server URL is replaced
// by a port-less one so that nodes on different ports share it; paths
// are matched on the URL path only.
var contractValidators struct {
	sync.Mutex
	byText map[string]*lockedValidator
}

// lockedValidator serialises use of one shared validator.
type lockedValidator struct {
	mu sync.Mutex
	v  validator.Validator
}

func (l *lockedValidator) validate(req *nethttp.Request, resp *nethttp.Response) (bool, []*validatorerrors.ValidationError) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.v.ValidateHttpResponse(req, resp)
}

func contractValidator(t testing.TB, spec []byte) *lockedValidator {
	t.Helper()
	contractValidators.Lock()
	defer contractValidators.Unlock()
	if v := contractValidators.byText[string(spec)]; v != nil {
		return v
	}
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("contract validator: %v", errs)
	}
	if contractValidators.byText == nil {
		contractValidators.byText = map[string]*lockedValidator{}
	}
	lv := &lockedValidator{v: v}
	contractValidators.byText[string(spec)] = lv
	return lv
}

// WidgetToken passes the human check of the site with siteKey for action
// through the public protocol (challenge, proof of work, redeem), as
// clustertest.MintToken does against a cluster, and returns the widget's
// response token.
func WidgetToken(t testing.TB, tn *Node, siteKey, action string) string {
	t.Helper()
	tok, err := clustertest.MintToken(tn.N.APIURL(), siteKey, "http://127.0.0.1", action)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
