package persistence

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
	gproto "google.golang.org/protobuf/proto"

	"github.com/trustd/trustd/catalog"
	"github.com/trustd/trustd/proto/raftpb"
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

	mu      sync.Mutex
	waiters map[uint64]waiter // by Batch.Seq, for batches this node forwarded
}

type waiter struct {
	batch []*pending
	done  chan struct{}
}

func newFSM(self string) *fsm {
	f := &fsm{self: self, waiters: map[uint64]waiter{}}
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
	return &snapshot{c: f.cur.Load()}, nil
}

func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return fmt.Errorf("persistence: read snapshot: %w", err)
	}
	c, err := catalog.UnmarshalSnapshot(data)
	if err != nil {
		return err
	}
	f.cur.Store(c)
	return nil
}

type snapshot struct{ c *catalog.Catalog }

func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	data, err := s.c.MarshalSnapshot()
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
