package clustertest

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	nethttp "net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	gproto "google.golang.org/protobuf/proto"

	"github.com/trustd/trustd/node"
)

// otlpSpan is one span an OTLP receiver got, with the node that sent it.
type otlpSpan struct {
	node, name          string
	trace, span, parent string
	attrs               map[string]string
}

// otlpReceiver is an in-process OTLP/HTTP trace receiver on loopback: it
// decodes each protobuf export request, as a collector would.
type otlpReceiver struct {
	URL      string
	mu       sync.Mutex
	requests int
	spans    []otlpSpan
}

func startOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &otlpReceiver{URL: "http://" + ln.Addr().String()}
	srv := &nethttp.Server{Handler: nethttp.HandlerFunc(r.serve), ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close(); <-done })
	return r
}

func (r *otlpReceiver) serve(w nethttp.ResponseWriter, req *nethttp.Request) {
	if req.Method != "POST" || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
		nethttp.Error(w, "not an OTLP/HTTP protobuf trace export", nethttp.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(req.Body)
	var ex coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = gproto.Unmarshal(body, &ex)
	}
	if err != nil {
		nethttp.Error(w, err.Error(), nethttp.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.requests++
	for _, rs := range ex.ResourceSpans {
		nodeID := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.instance.id" {
				nodeID = kv.Value.GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				sp := otlpSpan{node: nodeID, name: s.Name, trace: hex.EncodeToString(s.TraceId),
					span: hex.EncodeToString(s.SpanId), parent: hex.EncodeToString(s.ParentSpanId), attrs: map[string]string{}}
				for _, kv := range s.Attributes {
					v := kv.Value.GetStringValue()
					if v == "" {
						v = fmt.Sprint(kv.Value.GetIntValue())
					}
					sp.attrs[kv.Key] = v
				}
				r.spans = append(r.spans, sp)
			}
		}
	}
	r.mu.Unlock()
	out, _ := gproto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// trace returns the spans received for trace id tid.
func (r *otlpReceiver) trace(tid string) []otlpSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []otlpSpan
	for _, s := range r.spans {
		if s.trace == tid {
			out = append(out, s)
		}
	}
	return out
}

// lockedBuffer is a log destination several nodes write to.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitForwarded waits until one of the traces sent (of operation op, each
// under the caller's span parent) is a forwarded one (forwardedTrace), and
// returns its id.
func waitForwarded(t *testing.T, rcv *otlpReceiver, op string, sent []string, parent string) string {
	t.Helper()
	var forwarded string
	Eventually(t, 20*time.Second, func() error {
		for _, tid := range sent {
			err := forwardedTrace(rcv.trace(tid), op, parent)
			switch {
			case err == nil:
				forwarded = tid
			case err != errNotForwarded:
				return fmt.Errorf("trace %s: %w", tid, err)
			}
		}
		if forwarded == "" {
			return fmt.Errorf("no trace of the %d %s requests has spans from both nodes yet", len(sent), op)
		}
		return nil
	})
	return forwarded
}

// forwardedTrace finds, among the spans of tid, the request's server span
// (operation op) on node-0 under the caller's span parent, its forwarded
// ask on node-0 and the owner's span on node-1; nil when the request was
// not forwarded.
func forwardedTrace(spans []otlpSpan, op, parent string) error {
	var server, ask, serve *otlpSpan
	for i := range spans {
		s := &spans[i]
		switch {
		case s.name == op && s.node == "node-0":
			server = s
		case s.name == "cluster.ask" && s.node == "node-0":
			ask = s
		case s.name == "cluster.serve" && s.node == "node-1":
			serve = s
		}
	}
	switch {
	case server == nil:
		return fmt.Errorf("no server span from node-0 in %+v", spans)
	case server.parent != parent:
		return fmt.Errorf("server span's parent %s, want the traceparent's %s", server.parent, parent)
	case ask == nil || serve == nil:
		return errNotForwarded
	case ask.parent != server.span:
		return fmt.Errorf("forwarded ask's parent %s, want the server span %s", ask.parent, server.span)
	case serve.parent != ask.span:
		return fmt.Errorf("owner's span's parent %s, want the forwarded ask %s", serve.parent, ask.span)
	case ask.attrs["trustd.peer_node"] != "node-1":
		return fmt.Errorf("forwarded ask names peer %q", ask.attrs["trustd.peer_node"])
	}
	return nil
}

var errNotForwarded = fmt.Errorf("check not forwarded")

// TestACheckForwardedToTheOwnerIsOneTraceAcrossBothNodes: with the OTEL_*
// environment pointing at an OTLP/HTTP receiver, a rate-limit check sent
// to the node that does not own its bucket yields one trace: the
// request's span on the entry node (a child of the caller's traceparent),
// its forwarded ask, and the owner's span on the other node. The trace id
// is in the request's log line.
func TestACheckForwardedToTheOwnerIsOneTraceAcrossBothNodes(t *testing.T) {
	rcv := startOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	t.Setenv("OTEL_TRACES_SAMPLER", "parentbased_always_on")
	logs := &lockedBuffer{}
	c := StartWith(t, 2, func(cfg *node.Config) {
		cfg.Tracing.Getenv = os.Getenv
		cfg.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	secret := setupRateLimit(t, c, 1_000_000)
	const parent = "00f067aa0ba902b7"
	var sent []string
	for i := range 32 {
		tid := fmt.Sprintf("4bf92f3577b34da6a3ce929d0e%06x", i+1)
		sent = append(sent, tid)
		body := fmt.Appendf(nil, `{"action":"login","subject_id":"user-%d"}`, i)
		st, b, err := c.DoWith(0, "POST", "/v1/rate-limit/check", secret, body,
			map[string]string{"traceparent": "00-" + tid + "-" + parent + "-01"})
		if err != nil || st != 200 {
			t.Fatalf("check %d: %d %s %v", i, st, b, err)
		}
	}
	forwarded := waitForwarded(t, rcv, "rateLimitCheck", sent, parent)
	t.Logf("trace %s: %d spans", forwarded, len(rcv.trace(forwarded)))
	for _, s := range rcv.trace(forwarded) {
		for k, v := range s.attrs {
			if strings.Contains(v, secret) {
				t.Fatalf("span %s attribute %s holds the site secret", s.name, k)
			}
		}
	}

	// A siteverify sent to the node that does not own its token is one
	// trace too.
	hv := setupSite(t, c)
	var verified []string
	for i := range 16 {
		tok := c.mint(t, 0, hv)
		tid := fmt.Sprintf("5cf92f3577b34da6a3ce929d0e%06x", i+1)
		verified = append(verified, tid)
		st, b, err := c.DoWith(0, "POST", "/v1/siteverify", "", []byte("secret="+hv.secret+"&response="+tok),
			map[string]string{"traceparent": "00-" + tid + "-" + parent + "-01", "Content-Type": "application/x-www-form-urlencoded"})
		if err != nil || st != 200 || !strings.Contains(string(b), `"success":true`) {
			t.Fatalf("siteverify %d: %d %s %v", i, st, b, err)
		}
	}
	waitForwarded(t, rcv, "siteverify", verified, parent)

	// An admin request's log line carries its trace and span ids.
	const adminTrace = "0af7651916cd43dd8448eb211c80319c"
	st, b, err := c.DoWith(0, "GET", "/admin/v1/workspaces", AdminToken, nil,
		map[string]string{"traceparent": "00-" + adminTrace + "-b7ad6b7169203331-01"})
	if err != nil || st != 200 {
		t.Fatalf("list workspaces: %d %s %v", st, b, err)
	}
	Eventually(t, 10*time.Second, func() error {
		for _, line := range strings.Split(logs.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) != nil || rec["msg"] != "admin request" || rec["op"] != "listWorkspaces" {
				continue
			}
			if rec["trace_id"] != adminTrace {
				return fmt.Errorf("admin request logged with trace_id %v, want %s: %s", rec["trace_id"], adminTrace, line)
			}
			spans := rcv.trace(adminTrace)
			if len(spans) != 1 || rec["span_id"] != spans[0].span {
				return fmt.Errorf("log line's span_id %v; spans of its trace %+v", rec["span_id"], spans)
			}
			return nil
		}
		return fmt.Errorf("no admin request log line yet")
	})
}

// TestTracesAreOffUnlessTheEnvironmentAsksForThem: an endpoint with
// OTEL_TRACES_EXPORTER=none starts no tracer, and nothing reaches the
// receiver, not even when the node stops (when it would flush).
func TestTracesAreOffUnlessTheEnvironmentAsksForThem(t *testing.T) {
	rcv := startOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	c := StartWith(t, 1, func(cfg *node.Config) { cfg.Tracing.Getenv = os.Getenv })
	if c.Nodes[0].Tracing() != nil {
		t.Fatal("OTEL_TRACES_EXPORTER=none started a tracer")
	}
	for range 5 {
		st, b, err := c.DoWith(0, "GET", "/admin/v1/workspaces", AdminToken, nil,
			map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
		if err != nil || st != 200 {
			t.Fatalf("list workspaces: %d %s %v", st, b, err)
		}
	}
	c.closeAll()
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if rcv.requests != 0 || len(rcv.spans) != 0 {
		t.Fatalf("tracing off, yet the receiver got %d exports (%d spans)", rcv.requests, len(rcv.spans))
	}
}
