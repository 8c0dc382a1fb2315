package persistence

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/go-json-experiment/json"

	"github.com/hashicorp/raft"
	gproto "google.golang.org/protobuf/proto"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/proto/raftpb"
)

// result is what applying one command of a batch produced.
type result struct {
	value any
	err   error
}

// fsm applies batches of catalog commands. Raft calls Apply, Snapshot and
// Restore from one goroutine; readers only load the atomic pointer.
type fsm struct {
	cur  atomic.Pointer[catalog.Catalog]
	self string
	log  *slog.Logger

	// halted is the first entry this node refused for its format
	// (format.go): from it on nothing is applied, since applying later
	// entries without it would diverge from the other nodes. Raft's
	// applied index moves on, but Snapshot refuses, so the log is kept
	// and the node, restarted on a build that reads the format, replays
	// it from the last snapshot.
	halted  atomic.Pointer[error]
	refused refusals

	mu      sync.Mutex
	waiters map[uint64]waiter // by Batch.Seq, for batches this node forwarded
}

type waiter struct {
	batch []*pending
	done  chan struct{}
}

func newFSM(self string, log *slog.Logger) *fsm {
	f := &fsm{self: self, log: log, waiters: map[uint64]waiter{}}
	f.cur.Store(catalog.Empty())
	return f
}

// await registers callers waiting for a forwarded batch; the returned
// channel closes once their results were delivered.
func (f *fsm) await(seq uint64, batch []*pending) <-chan struct{} {
	w := waiter{batch: batch, done: make(chan struct{})}
	f.mu.Lock()
	f.waiters[seq] = w
	f.mu.Unlock()
	return w.done
}

// abandon unregisters a forwarded batch that failed; it returns its
// callers, or nil when the FSM already answered them.
func (f *fsm) abandon(seq uint64) []*pending {
	f.mu.Lock()
	defer f.mu.Unlock()
	w, ok := f.waiters[seq]
	if !ok {
		return nil
	}
	delete(f.waiters, seq)
	return w.batch
}

// deliver hands the results of a batch this node forwarded to its callers.
func (f *fsm) deliver(b *raftpb.Batch, out []result) {
	if b.Origin != f.self || b.Seq == 0 {
		return
	}
	f.mu.Lock()
	w, ok := f.waiters[b.Seq]
	delete(f.waiters, b.Seq)
	f.mu.Unlock()
	if !ok {
		return
	}
	for i, p := range w.batch {
		if i < len(out) {
			p.done <- out[i]
		}
	}
	close(w.done)
}

// Apply decodes one log entry (a Batch) and applies its commands in order
// to one transaction. A command that fails leaves the catalog as it was
// before that command; the others still apply.
func (f *fsm) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	var b raftpb.Batch
	if err := gproto.Unmarshal(l.Data, &b); err != nil {
		return []result{{err: fmt.Errorf("persistence: undecodable log entry %d: %w", l.Index, err)}}
	}
	if err := f.readable(l.Index, &b); err != nil {
		out := make([]result, max(len(b.Commands), 1))
		for i := range out {
			out[i].err = err
		}
		f.deliver(&b, out)
		return out
	}
	tx := catalog.BeginAt(f.cur.Load(), l.Index)
	if onlyMembership(&b) {
		tx = catalog.BeginMembership(f.cur.Load(), l.Index)
	}
	out := make([]result, len(b.Commands))
	for i, c := range b.Commands {
		cmd, err := catalog.Decode(c.Kind, c.Body)
		if err != nil {
			out[i].err = err
			continue
		}
		out[i].value, out[i].err = cmd.Apply(tx)
	}
	f.cur.Store(tx.Commit(l.Index))
	f.deliver(&b, out)
	return out
}

// readable refuses an entry of a format this build does not read, and
// every entry after the first refused one (see halted).
func (f *fsm) readable(index uint64, b *raftpb.Batch) error {
	if h := f.halted.Load(); h != nil {
		return *h
	}
	err := checkFormat("raft log entry", b.Format, LogFormat)
	if err == nil {
		return nil
	}
	err = fmt.Errorf("entry %d: %w; this node applies nothing more until it runs a build that reads it", index, err)
	f.halted.Store(&err)
	f.refused.entries.Add(1)
	f.log.Error("persistence: refused a raft log entry written in a newer format; state frozen at the previous entry, upgrade this node",
		"index", index, "format", b.Format, "reads_up_to", LogFormat)
	return err
}

// onlyMembership reports whether every command of b is a liveness
// renewal or another membership change (catalog.BeginMembership). An
// empty batch (a follower's read barrier, backup.go) counts as one: it
// changes no configuration, so caches keyed on ConfigIndex stay valid.
func onlyMembership(b *raftpb.Batch) bool {
	for _, c := range b.Commands {
		if !catalog.IsMembership(c.Kind) {
			return false
		}
	}
	return true
}

func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	if h := f.halted.Load(); h != nil {
		// A snapshot now would let Raft drop the entries this node could
		// not apply; keeping them lets a newer build replay them.
		return nil, fmt.Errorf("persistence: no snapshot while halted: %w", *h)
	}
	return &snapshot{c: f.cur.Load()}, nil
}

func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return fmt.Errorf("persistence: read snapshot: %w", err)
	}
	c, err := f.readSnapshot(data)
	if err != nil {
		return err
	}
	f.cur.Store(c)
	return nil
}

// snapshotHead is the member of a snapshot's JSON object that states its
// format; the catalog's own members follow it.
type snapshotHead struct {
	Format uint32 `json:"snapshot_format"`
}

// readSnapshot decodes a snapshot, refusing a format this build does not
// read. Builds before versions wrote none (format 0, the same layout).
func (f *fsm) readSnapshot(data []byte) (*catalog.Catalog, error) {
	var head snapshotHead
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("persistence: restore snapshot: %w", err)
	}
	if err := checkFormat("snapshot", head.Format, SnapshotFormat); err != nil {
		f.refused.snapshots.Add(1)
		f.log.Error("persistence: refused a snapshot written in a newer format; upgrade this node",
			"format", head.Format, "reads_up_to", SnapshotFormat)
		return nil, err
	}
	return catalog.UnmarshalSnapshot(data)
}

// writeSnapshot encodes c with its format stated first. The previous
// release's decoder skips the member it does not know.
func writeSnapshot(c *catalog.Catalog) ([]byte, error) {
	data, err := c.MarshalSnapshot()
	if err != nil {
		return nil, err
	}
	if len(data) < 2 || data[0] != '{' {
		return nil, errors.New("persistence: catalog snapshot is not a JSON object")
	}
	head := fmt.Appendf(nil, `{"snapshot_format":%d`, SnapshotFormat)
	if !bytes.Equal(bytes.TrimSpace(data[1:]), []byte("}")) {
		head = append(head, ',')
	}
	return append(head, data[1:]...), nil
}

type snapshot struct{ c *catalog.Catalog }

func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	data, err := writeSnapshot(s.c)
	if err == nil {
		_, err = sink.Write(data)
	}
	if err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("persistence: write snapshot: %w", err)
	}
	return sink.Close()
}

func (s *snapshot) Release() {}
