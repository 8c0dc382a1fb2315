package cluster

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	gproto "google.golang.org/protobuf/proto"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/lib/ratelimit"
	"github.com/trustd/trustd/platform/proto/clusterpb"
)

// mustServePeer serves a Cluster over r (one node of a pair) on a loopback
// port of its own, its log lines in the returned buffer.
func mustServePeer(t *testing.T, r *Router) (*Cluster, string, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	c := &Cluster{router: r, token: peerToken("k"), log: slog.New(slog.NewTextHandler(&logs, nil)), handedOff: map[string]uint64{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := c.newPeerServer()
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown(); _ = ln.Close(); <-done })
	return c, ln.Addr().String(), &logs
}

// Asks of the previous release (no format) and of this build are served;
// an ask of format N+1 is refused with a clear error, a log line and a
// count, never misread, and the asks beside it in its frame still run.
func TestAnAskOfANewerFormatIsRefused(t *testing.T) {
	p := mustNewPair(t)
	c, addr, logs := mustServePeer(t, p.b)
	key := p.keyOwnedBy("b")
	bucket := ratelimit.BucketConfig{Capacity: 10, RefillAmount: 1, RefillInterval: 1 << 62}
	op, err := (&actors.Reserve{Key: key, Bucket: bucket, Cost: 1}).AppendOp(nil)
	if err != nil {
		t.Fatal(err)
	}
	kind := (&actors.Reserve{}).OpKind()
	ask := func(format uint32) []byte {
		b, err := gproto.Marshal(&clusterpb.Ask{Epoch: 1, Partition: uint32(Partition(key)), Kind: kind, Op: op, Format: format})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	current, err := appendAsk(nil, 1, uint32(Partition(key)), kind, op, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(current, ask(AskFormat)) {
		t.Fatalf("this build's ask does not state format %d", AskFormat)
	}
	var frame []byte
	for _, a := range [][]byte{ask(0), current, ask(AskFormat + 1)} {
		frame = protowire.AppendTag(frame, 1, protowire.BytesType)
		frame = protowire.AppendBytes(frame, a)
	}
	tr := NewTransport("k", nil)
	defer tr.Close()
	out, err := tr.callFrame(addr, frame, nil, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var answers []answer
	for len(out) > 0 {
		v, rest, ok := nextField(out)
		if !ok {
			t.Fatalf("undecodable answer frame")
		}
		var a answer
		if !a.decode(v) {
			t.Fatal("undecodable answer")
		}
		answers, out = append(answers, a), rest
	}
	if len(answers) != 3 {
		t.Fatalf("%d answers to 3 asks", len(answers))
	}
	for i, name := range []string{"previous release's (format 0)", "this build's"} {
		res := &actors.Reserve{}
		if answers[i].status != clusterpb.Status_STATUS_OK || res.UnmarshalResult(answers[i].result) != nil || !res.OK || res.Remaining != int64(9-i) {
			t.Fatalf("%s ask: status %s err %q remaining %d", name, answers[i].status, answers[i].err, res.Remaining)
		}
	}
	if a := answers[2]; a.status != clusterpb.Status_STATUS_BAD_REQUEST || !strings.Contains(a.err, "ask format 2 is newer than this node reads (up to 1)") {
		t.Fatalf("format %d ask: status %s err %q; want a refusal naming the format", AskFormat+1, a.status, a.err)
	}

	// One ask on its own (the per-request path) is refused the same way.
	single, err := tr.call(addr, pathAsk, ask(AskFormat+1), nil, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var a answer
	if !a.decode(single) || a.status != clusterpb.Status_STATUS_BAD_REQUEST || !strings.Contains(a.err, "newer than this node reads") {
		t.Fatalf("single format-2 ask: status %s err %q", a.status, a.err)
	}
	if got := c.RefusedAsks(); got != 2 {
		t.Fatalf("refused asks counted %d, want 2", got)
	}
	// The bucket was debited by the two readable asks only.
	res := &actors.Reserve{Key: key, Bucket: bucket, Cost: 1}
	if err := p.b.AskLocal(Partition(key), res); err != nil || res.Remaining != 7 {
		t.Fatalf("bucket after the frame: remaining %d (%v), want 7", res.Remaining, err)
	}
	// One log line however many refusals (refusalLogEvery).
	if n := strings.Count(logs.String(), "refused an ask written in a newer format"); n != 1 {
		t.Fatalf("%d log lines for 2 refusals, want 1:\n%s", n, logs)
	}
	for _, want := range []string{"level=ERROR", "format=2", "reads_up_to=1", "kind=" + kind} {
		if !strings.Contains(logs.String(), want) {
			t.Fatalf("log line lacks %q:\n%s", want, logs)
		}
	}
}

// Every node gossips the formats it reads; a member of the previous
// release gossips none and reads format 1 of each; the cluster reads what
// its least capable member reads.
func TestMembersGossipTheFormatsTheyRead(t *testing.T) {
	cur := Formats{Log: 1, Snapshot: 1, Ask: AskFormat, Handoff: HandoffFormat, Status: StatusFormat, Leave: LeaveFormat}
	b, err := Meta{ID: "n1", APIAddr: "127.0.0.1:1", State: Ready, Formats: cur}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	m, err := DecodeMeta(b)
	if err != nil || m.Formats != cur || m.Reads() != cur {
		t.Fatalf("round trip: %+v %v", m, err)
	}
	// What the previous release gossips: no formats field at all.
	old, err := gproto.Marshal(&clusterpb.NodeMeta{Id: "n0", ApiAddr: "127.0.0.1:2", State: clusterpb.NodeState_NODE_STATE_READY})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := DecodeMeta(old); err != nil || m.Reads() != (Formats{1, 1, 1, 1, 1, 1}) {
		t.Fatalf("a previous-release member reads %+v (%v), want format 1 of each", m.Reads(), err)
	}
	// What the release before the hand-off, status and leave formats
	// gossips: the log, snapshot and ask formats only. It reads format 1
	// (the layout of its format 0) of the others.
	mid, err := gproto.Marshal(&clusterpb.NodeMeta{Id: "n0", State: clusterpb.NodeState_NODE_STATE_READY,
		Formats: &clusterpb.Formats{Log: 2, Snapshot: 1, Ask: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := DecodeMeta(mid); err != nil || m.Reads() != (Formats{2, 1, 1, 1, 1, 1}) {
		t.Fatalf("a member that names only log, snapshot and ask reads %+v (%v), want 1 of the others", m.Reads(), err)
	}
	if got := (Formats{}).orDefault(); got != cur {
		t.Fatalf("a node configured with no formats gossips %+v, want %+v", got, cur)
	}
	if got := (Formats{Log: 3, Snapshot: 2, Ask: AskFormat}).orDefault(); got != (Formats{3, 2, AskFormat, HandoffFormat, StatusFormat, LeaveFormat}) {
		t.Fatalf("node/ names the log, snapshot and ask formats; gossiped %+v", got)
	}
	for _, tc := range []struct {
		name    string
		members []Meta
		want    Formats
	}{
		{"a lone node reads its own", []Meta{{Formats: Formats{2, 3, 4, 5, 6, 7}}}, Formats{2, 3, 4, 5, 6, 7}},
		{"a previous-release member holds every kind at 1", []Meta{{Formats: Formats{2, 2, 2, 2, 2, 2}}, {}}, Formats{1, 1, 1, 1, 1, 1}},
		{"a member without the peer message formats holds those at 1", []Meta{{Formats: Formats{2, 2, 2, 2, 2, 2}}, {Formats: Formats{Log: 2, Snapshot: 2, Ask: 2}}},
			Formats{2, 2, 2, 1, 1, 1}},
		{"each kind is the least of the members", []Meta{{Formats: Formats{2, 1, 3, 2, 3, 1}}, {Formats: Formats{3, 2, 2, 1, 3, 2}}}, Formats{2, 1, 2, 1, 3, 1}},
	} {
		if got := minReads(tc.members); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
