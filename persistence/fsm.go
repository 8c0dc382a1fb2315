package persistence

import (
	"fmt"
	"io"
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
	cur atomic.Pointer[catalog.Catalog]
}

func newFSM() *fsm {
	f := &fsm{}
	f.cur.Store(catalog.Empty())
	return f
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
	tx := catalog.Begin(f.cur.Load())
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
	return out
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
