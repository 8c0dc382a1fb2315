package cluster

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	gproto "google.golang.org/protobuf/proto"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/proto/clusterpb"
)

// The hand-off, the status report and the leave request state their
// format as asks do (wireformat.go): the previous release's messages
// (no format) and this build's are read; a message of a newer format is
// refused with an error naming it, one log line however many arrive, and
// a count per kind (trustd_format_refused_total{what=...}), never
// misread.

// wantOneLogLine fails unless logs holds exactly one line containing msg,
// with every attribute of want.
func wantOneLogLine(t *testing.T, logs *bytes.Buffer, msg string, want ...string) {
	t.Helper()
	if n := strings.Count(logs.String(), msg); n != 1 {
		t.Fatalf("%d log lines %q, want 1:\n%s", n, msg, logs)
	}
	for _, w := range append([]string{"level=ERROR"}, want...) {
		if !strings.Contains(logs.String(), w) {
			t.Fatalf("log line lacks %q:\n%s", w, logs)
		}
	}
}

// markerChunks exports the markers ids hold, consumed on a shard system of
// their own, as the hand-off chunks an old owner sends.
func markerChunks(t *testing.T, ids ...string) []*clusterpb.StateChunk {
	t.Helper()
	sys := actors.NewSystem(actors.Config{Shards: 4}, nil)
	defer sys.Stop()
	for _, id := range ids {
		if err := sys.Ask(Partition(id), &actors.Consume{ID: id, Expires: time.Now().Add(time.Hour).UnixNano()}, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	var out []*clusterpb.StateChunk
	for i := 0; i < sys.Shards(); i++ {
		op := &actors.Export{In: func(int) bool { return true }}
		if err := sys.Ask(i, op, time.Second); err != nil {
			t.Fatal(err)
		}
		for _, ch := range op.Chunks {
			out = append(out, &clusterpb.StateChunk{Kind: uint32(ch.Kind), Partition: uint32(ch.Partition), Data: ch.Data})
		}
	}
	return out
}

func TestAHandoffOfANewerFormatIsRefused(t *testing.T) {
	p := mustNewPair(t)
	c, addr, logs := mustServePeer(t, p.b)
	tr := NewTransport("k", nil)
	defer tr.Close()
	send := func(format uint32, id string) error {
		t.Helper()
		body, err := gproto.Marshal(&clusterpb.Handoff{Epoch: 1, From: "a", Chunks: markerChunks(t, id), Format: format})
		if err != nil {
			t.Fatal(err)
		}
		_, err = tr.call(addr, pathHandoff, body, nil, time.Second)
		return err
	}
	held := func(id string) bool {
		t.Helper()
		seen := &actors.Seen{ID: id}
		if err := p.b.AskLocal(Partition(id), seen); err != nil {
			t.Fatal(err)
		}
		return seen.Used
	}

	for i := range 2 {
		err := send(HandoffFormat+1, "tok/newer")
		if !errors.Is(err, ErrPeerRefused) || !strings.Contains(err.Error(), "hand-off format 2 is newer than this node reads (up to 1)") {
			t.Fatalf("format %d hand-off %d: %v; want a refusal naming the format", HandoffFormat+1, i+1, err)
		}
	}
	if held("tok/newer") {
		t.Fatal("a refused hand-off was imported")
	}
	if got := c.RefusedFormats(); got != (Refused{Handoffs: 2}) {
		t.Fatalf("refusals %+v, want 2 hand-offs", got)
	}
	wantOneLogLine(t, logs, "refused a hand-off written in a newer format", "format=2", "reads_up_to=1", "from=a")

	for _, tc := range []struct {
		name   string
		format uint32
		id     string
	}{
		{"the previous release's hand-off (no format) is imported", 0, "tok/previous"},
		{"this build's hand-off is imported", HandoffFormat, "tok/current"},
	} {
		if err := send(tc.format, tc.id); err != nil || !held(tc.id) {
			t.Fatalf("%s: %v, marker held %v", tc.name, err, held(tc.id))
		}
	}
}

// recordingPeer serves the peer paths on loopback and keeps the bodies it
// was sent, by path, answering each with answer.
func recordingPeer(t *testing.T, answer []byte) (addr string, bodies func(path string) [][]byte) {
	t.Helper()
	var mu sync.Mutex
	got := map[string][][]byte{}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		mu.Lock()
		got[string(ctx.Path())] = append(got[string(ctx.Path())], bytes.Clone(ctx.PostBody()))
		mu.Unlock()
		ctx.SetBody(answer)
	}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown(); <-done })
	return ln.Addr().String(), func(path string) [][]byte {
		mu.Lock()
		defer mu.Unlock()
		return got[path]
	}
}

func TestThisBuildsHandoffAndLeaveStateTheirFormat(t *testing.T) {
	p := mustNewPair(t)
	key := p.keyOwnedBy("a")
	if err := p.a.AskLocal(Partition(key), &actors.Consume{ID: key, Expires: time.Now().Add(time.Hour).UnixNano()}); err != nil {
		t.Fatal(err)
	}
	addr, bodies := recordingPeer(t, nil)
	tr := NewTransport("k", nil)
	defer tr.Close()
	c := &Cluster{cfg: Config{NodeID: "a"}, router: p.a, trans: tr, log: slog.New(slog.DiscardHandler),
		members: map[string]member{"x": {meta: Meta{ID: "x", PeerAddr: addr}}}}
	c.leftGossip.Store(true) // no gossip of its own: Members lists x alone

	if err := c.sendHandoff(1, Member{ID: "x", PeerAddr: addr}, &handoffPlan{all: map[int]bool{Partition(key): true}}); err != nil {
		t.Fatal(err)
	}
	sent := bodies(pathHandoff)
	var h clusterpb.Handoff
	if len(sent) != 1 || gproto.Unmarshal(sent[0], &h) != nil || h.Format != HandoffFormat || len(h.Chunks) == 0 {
		t.Fatalf("hand-off sent %d bodies, format %d, %d chunks; want one of format %d with the marker", len(sent), h.Format, len(h.Chunks), HandoffFormat)
	}

	if err := c.RequestLeave("x"); err != nil {
		t.Fatal(err)
	}
	sent = bodies(pathLeave)
	var lr clusterpb.LeaveRequest
	if len(sent) != 1 || gproto.Unmarshal(sent[0], &lr) != nil || lr.Format != LeaveFormat {
		t.Fatalf("leave request sent %d bodies, format %d; want one of format %d", len(sent), lr.Format, LeaveFormat)
	}
}

func TestAStatusReportOfANewerFormatIsRefused(t *testing.T) {
	var logs bytes.Buffer
	c := &Cluster{log: slog.New(slog.NewTextHandler(&logs, nil))}
	report := func(format uint32) []byte {
		b, err := gproto.Marshal(&clusterpb.NodeStatus{Id: "n2", LastIndex: 42, RingMembers: []string{"n1", "n2"}, Format: format})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name   string
		format uint32
	}{{"the previous release's report (no format) is read", 0}, {"this build's report is read", StatusFormat}} {
		st, err := c.formats.decodeStatus(report(tc.format), c.log)
		if err != nil || st.Id != "n2" || st.LastIndex != 42 || len(st.RingMembers) != 2 {
			t.Fatalf("%s: %+v %v", tc.name, st, err)
		}
	}
	for range 2 {
		st, err := c.formats.decodeStatus(report(StatusFormat+1), c.log)
		if st != nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), `status format 2 from "n2" is newer than this node reads (up to 1)`) {
			t.Fatalf("format %d report: %+v %v; want a refusal naming the format", StatusFormat+1, st, err)
		}
	}
	if got := c.RefusedFormats(); got != (Refused{Statuses: 2}) {
		t.Fatalf("refusals %+v, want 2 status reports", got)
	}
	wantOneLogLine(t, &logs, "refused a status report written in a newer format", "format=2", "reads_up_to=1", "node=n2")

	// The readers of reports use it: the status of a peer that answers in
	// a newer format is a peer that did not answer.
	addr, _ := recordingPeer(t, report(StatusFormat+1))
	tr := NewTransport("k", nil)
	defer tr.Close()
	c.trans = tr
	if st, err := c.peerStatus(addr, time.Second); st != nil || !errors.Is(err, ErrFormat) {
		t.Fatalf("peerStatus of a newer-format peer: %+v %v", st, err)
	}
}

func TestALeaveRequestOfANewerFormatIsRefused(t *testing.T) {
	p := mustNewPair(t)
	c, addr, logs := mustServePeer(t, p.b)
	for _, tc := range []struct {
		name string
		body []byte
	}{{"the previous release's empty request is read", nil}, {"this build's request is read", leaveRequest()}} {
		if err := c.formats.leaveReadable(tc.body, c.log); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
	}
	if err := c.formats.leaveReadable([]byte{0xff}, c.log); err == nil || errors.Is(err, ErrFormat) {
		t.Fatalf("an undecodable request: %v", err)
	}
	newer, err := gproto.Marshal(&clusterpb.LeaveRequest{Format: LeaveFormat + 1})
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTransport("k", nil)
	defer tr.Close()
	for i := range 2 {
		_, err := tr.call(addr, pathLeave, newer, nil, time.Second)
		if !errors.Is(err, ErrPeerRefused) || !strings.Contains(err.Error(), "leave request format 2 is newer than this node reads (up to 1)") {
			t.Fatalf("format %d leave request %d: %v; want a refusal naming the format", LeaveFormat+1, i+1, err)
		}
	}
	if c.leaving.Load() {
		t.Fatal("a refused leave request started a leave")
	}
	if got := c.RefusedFormats(); got != (Refused{Leaves: 2}) {
		t.Fatalf("refusals %+v, want 2 leave requests", got)
	}
	wantOneLogLine(t, logs, "refused a leave request written in a newer format", "format=2", "reads_up_to=1")
}
