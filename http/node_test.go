package http_test

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
)

// testNode is a real single node on loopback ports with a temporary data
// dir, and a small client for it.
type testNode struct {
	t         *testing.T
	n         *node.Node
	cfg       node.Config
	validator *lockedValidator
}

func mustStartNode(t *testing.T, mutate ...func(*node.Config)) *testNode {
	t.Helper()
	cfg := node.Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", FastRaft: true}
	for _, m := range mutate {
		m(&cfg)
	}
	return startNode(t, cfg)
}

func startNode(t *testing.T, cfg node.Config) *testNode {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := node.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	tn := &testNode{t: t, n: n, cfg: cfg}
	t.Cleanup(func() { tn.stop() })
	return tn
}

func (tn *testNode) stop() {
	if tn.n == nil {
		return
	}
	// Generous: under -race on a starved 2-core machine a handler still
	// running can take seconds to finish.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tn.n.Close(ctx); err != nil {
		tn.t.Errorf("close node: %v", err)
	}
	tn.n = nil
}

type response struct {
	status int
	header nethttp.Header
	body   []byte
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v, json.RejectUnknownMembers(false)); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

func (r response) errorCode(t *testing.T) string {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	r.decode(t, &e)
	return e.Error
}

// do sends a request; body may be nil, a string (sent as is) or a value
// encoded as JSON.
func (tn *testNode) do(method, path, token string, body any, headers ...string) response {
	tn.t.Helper()
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
			tn.t.Fatal(err)
		}
		rd = bytes.NewReader(enc)
	}
	req, err := nethttp.NewRequest(method, tn.n.APIURL()+path, rd)
	if err != nil {
		tn.t.Fatal(err)
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
		tn.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	tn.checkContract(req, resp, b)
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// checkContract validates every answer of a documented operation against
// the node's own /openapi.json: a response that drifts from the contract
// fails the test that provoked it.
func (tn *testNode) checkContract(req *nethttp.Request, resp *nethttp.Response, body []byte) {
	tn.t.Helper()
	if !strings.HasPrefix(req.URL.Path, "/v1/") && !strings.HasPrefix(req.URL.Path, "/admin/v1/") {
		return
	}
	if resp.StatusCode == 404 || resp.StatusCode == 405 || req.URL.Path == "/v1/openapi.json" {
		return
	}
	if tn.validator == nil {
		r, err := nethttp.Get(tn.n.APIURL() + "/v1/openapi.json")
		if err != nil {
			tn.t.Fatal(err)
		}
		spec, _ := io.ReadAll(r.Body)
		r.Body.Close()
		tn.validator = contractValidator(tn.t, bytes.ReplaceAll(spec, []byte(tn.n.APIURL()), []byte("http://127.0.0.1")))
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if ok, errs := tn.validator.ValidateHttpResponse(req, resp); !ok {
		for _, e := range errs {
			tn.t.Errorf("%s %s → %d does not match the contract: %s %s %v", req.Method, req.URL.Path, resp.StatusCode, e.Message, e.Reason, e.SchemaValidationErrors)
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

func (l *lockedValidator) ValidateHttpResponse(req *nethttp.Request, resp *nethttp.Response) (bool, []*validatorerrors.ValidationError) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.v.ValidateHttpResponse(req, resp)
}

func contractValidator(t *testing.T, spec []byte) *lockedValidator {
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

func (tn *testNode) admin(method, path string, body any) response {
	tn.t.Helper()
	return tn.do(method, "/admin/v1"+path, tn.n.AdminToken(), body)
}

// mustCreate posts body and decodes the 201 answer into out.
func (tn *testNode) mustCreate(path string, body, out any) {
	tn.t.Helper()
	r := tn.admin("POST", path, body)
	if r.status != 201 {
		tn.t.Fatalf("POST %s: %d %s", path, r.status, r.body)
	}
	r.decode(tn.t, out)
}
