package persistence

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	gproto "google.golang.org/protobuf/proto"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/proto/raftpb"
)

// mustNewLoggedFSM returns an FSM whose log lines land in the buffer.
func mustNewLoggedFSM(t *testing.T) (*fsm, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	return newFSM("n1", slog.New(slog.NewTextHandler(&buf, nil))), &buf
}

// entry encodes a batch creating workspace id, in the given format.
func entry(t *testing.T, index uint64, format uint32, id string) *raft.Log {
	t.Helper()
	body, err := catalog.Encode(&catalog.CreateWorkspace{Workspace: catalog.Workspace{ID: id, Name: id, Settings: catalog.DefaultSettings()}})
	if err != nil {
		t.Fatal(err)
	}
	data, err := gproto.Marshal(&raftpb.Batch{Format: format, Commands: []*raftpb.Command{{Kind: "workspace.create", Body: body}}})
	if err != nil {
		t.Fatal(err)
	}
	return &raft.Log{Index: index, Type: raft.LogCommand, Data: data}
}

func hasWorkspace(f *fsm, id string) bool {
	_, ok := f.cur.Load().Workspaces[id]
	return ok
}

func TestLogEntryFormats(t *testing.T) {
	f, logs := mustNewLoggedFSM(t)

	// The previous release (61b6550) writes no format: format 0 reads as 1.
	if out := f.Apply(entry(t, 1, 0, "ws-old")).([]result); out[0].err != nil || !hasWorkspace(f, "ws-old") {
		t.Fatalf("an unversioned entry of the previous release was not applied: %v", out[0].err)
	}
	if out := f.Apply(entry(t, 2, LogFormat, "ws-cur")).([]result); out[0].err != nil || !hasWorkspace(f, "ws-cur") {
		t.Fatalf("an entry of this build's format was not applied: %v", out[0].err)
	}

	// Format N+1 is refused, not misread: nothing of it is applied.
	out := f.Apply(entry(t, 3, LogFormat+1, "ws-next")).([]result)
	if !errors.Is(out[0].err, ErrUnknownFormat) {
		t.Fatalf("entry of format %d: err %v, want ErrUnknownFormat", LogFormat+1, out[0].err)
	}
	if hasWorkspace(f, "ws-next") || f.cur.Load().Index != 2 {
		t.Fatalf("the refused entry changed the catalog (index %d)", f.cur.Load().Index)
	}
	if got := f.refused.load().Entries; got != 1 {
		t.Fatalf("refused entries counted %d, want 1", got)
	}
	line := logs.String()
	for _, want := range []string{"level=ERROR", "refused a raft log entry written in a newer format", "index=3", "format=2", "reads_up_to=1"} {
		if !strings.Contains(line, want) {
			t.Fatalf("log line lacks %q:\n%s", want, line)
		}
	}

	// Later entries are not applied on top of the hole, and no snapshot
	// lets Raft drop the refused entry.
	if out := f.Apply(entry(t, 4, LogFormat, "ws-after")).([]result); !errors.Is(out[0].err, ErrUnknownFormat) || hasWorkspace(f, "ws-after") {
		t.Fatalf("an entry after the refused one was applied (err %v)", out[0].err)
	}
	if _, err := f.Snapshot(); !errors.Is(err, ErrUnknownFormat) {
		t.Fatalf("snapshot of a halted FSM: err %v, want ErrUnknownFormat", err)
	}
	if got := f.refused.load().Entries; got != 1 {
		t.Fatalf("entries after the refused one counted again: %d", got)
	}
}

// memSink is a raft.SnapshotSink in memory.
type memSink struct{ bytes.Buffer }

func (*memSink) ID() string    { return "mem" }
func (*memSink) Cancel() error { return nil }
func (*memSink) Close() error  { return nil }

func snapshotOf(t *testing.T, f *fsm) []byte {
	t.Helper()
	s, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	if err := s.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	return sink.Bytes()
}

func TestSnapshotFormats(t *testing.T) {
	f, _ := mustNewLoggedFSM(t)
	f.Apply(entry(t, 1, LogFormat, "ws-1"))
	data := snapshotOf(t, f)
	if !bytes.HasPrefix(data, []byte(`{"snapshot_format":1,`)) {
		t.Fatalf("snapshot does not state its format first: %.60s", data)
	}

	// The previous release restores with catalog.UnmarshalSnapshot alone;
	// it must read this build's snapshot (the unknown member skipped).
	if c, err := catalog.UnmarshalSnapshot(data); err != nil || c.Workspaces["ws-1"].ID != "ws-1" {
		t.Fatalf("the previous release's decoder cannot read this build's snapshot: %v", err)
	}
	// This build reads its own and the previous release's (no format).
	old, err := f.cur.Load().MarshalSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	for name, snap := range map[string][]byte{"this build's": data, "an unversioned": old} {
		g, _ := mustNewLoggedFSM(t)
		if err := g.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil || !hasWorkspace(g, "ws-1") {
			t.Fatalf("restore of %s snapshot: %v", name, err)
		}
	}
	// An empty catalog still makes a valid object.
	if data, err := writeSnapshot(catalog.Empty()); err != nil || !bytes.HasPrefix(data, []byte(`{"snapshot_format":1`)) {
		t.Fatalf("empty catalog snapshot: %s, %v", data, err)
	} else if _, err := catalog.UnmarshalSnapshot(data); err != nil {
		t.Fatalf("empty catalog snapshot unreadable: %v", err)
	}

	// Format N+1 is refused with a log line and counted.
	next := bytes.Replace(data, []byte(`{"snapshot_format":1,`), []byte(`{"snapshot_format":2,`), 1)
	g, logs := mustNewLoggedFSM(t)
	if err := g.Restore(io.NopCloser(bytes.NewReader(next))); !errors.Is(err, ErrUnknownFormat) {
		t.Fatalf("restore of a format-2 snapshot: err %v, want ErrUnknownFormat", err)
	}
	if hasWorkspace(g, "ws-1") {
		t.Fatal("the refused snapshot was restored")
	}
	if got := g.refused.load().Snapshots; got != 1 {
		t.Fatalf("refused snapshots counted %d, want 1", got)
	}
	if !strings.Contains(logs.String(), "refused a snapshot written in a newer format") || !strings.Contains(logs.String(), "format=2") {
		t.Fatalf("no clear log line for the refused snapshot:\n%s", logs)
	}
}

func TestForwardedBatchOfNewerFormatNeverEntersTheLog(t *testing.T) {
	s := mustOpenStore(t, t.TempDir())
	defer s.Close()
	waitLeader(t, s)
	before := s.Raft().LastIndex()
	data := entry(t, 0, LogFormat+1, "ws-next").Data
	if _, err := s.ApplyBatch(data, 5*time.Second); !errors.Is(err, ErrUnknownFormat) {
		t.Fatalf("forwarded batch of format %d: err %v, want ErrUnknownFormat", LogFormat+1, err)
	}
	if s.Raft().LastIndex() != before || s.Refused().Entries != 1 || s.Halted() != nil {
		t.Fatalf("refused batch reached the log or halted the node: last %d (before %d), refused %+v, halted %v",
			s.Raft().LastIndex(), before, s.Refused(), s.Halted())
	}
	// This build's own writes carry the format.
	if _, err := s.Apply(context.Background(), &catalog.CreateWorkspace{Workspace: catalog.Workspace{ID: "ws-1", Name: "a", Settings: catalog.DefaultSettings()}}); err != nil {
		t.Fatal(err)
	}
	var l raft.Log
	if err := s.logs.GetLog(s.Raft().LastIndex(), &l); err != nil {
		t.Fatal(err)
	}
	var b raftpb.Batch
	if err := gproto.Unmarshal(l.Data, &b); err != nil || b.Format != LogFormat {
		t.Fatalf("last entry format %d (%v), want %d", b.Format, err, LogFormat)
	}
}

// A log entry of a newer format that reached the log (written by a newer
// leader) halts the store: nothing after it is applied, it reports not
// ready, and it stops cleanly, keeping its log.
func TestAStoreHaltsOnALogEntryOfANewerFormat(t *testing.T) {
	s := mustOpenStore(t, t.TempDir())
	defer s.Close()
	waitLeader(t, s)
	ctx := context.Background()
	if _, err := s.Apply(ctx, &catalog.CreateWorkspace{Workspace: catalog.Workspace{ID: "ws-1", Name: "a", Settings: catalog.DefaultSettings()}}); err != nil {
		t.Fatal(err)
	}
	if !s.Ready() {
		t.Fatal("store not ready before the refused entry")
	}
	// Raft.Apply directly: what a newer leader's replication delivers.
	if err := s.Raft().Apply(entry(t, 0, LogFormat+1, "ws-next").Data, 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(s.Halted(), ErrUnknownFormat) || s.Ready() || s.Refused().Entries != 1 {
		t.Fatalf("after an entry of format %d: halted %v, ready %v, refused %+v", LogFormat+1, s.Halted(), s.Ready(), s.Refused())
	}
	if _, err := s.Apply(ctx, &catalog.CreateWorkspace{Workspace: catalog.Workspace{ID: "ws-2", Name: "b", Settings: catalog.DefaultSettings()}}); !errors.Is(err, ErrUnknownFormat) {
		t.Fatalf("a write after the halt: err %v, want ErrUnknownFormat", err)
	}
	if _, ok := s.Catalog().Workspaces["ws-2"]; ok {
		t.Fatal("a write after the refused entry was applied")
	}
	if err := s.Raft().Snapshot().Error(); err == nil {
		t.Fatal("a halted store took a snapshot (the refused entry could be dropped from the log)")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close of a halted store: %v", err)
	}
}
