package persistence

import (
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
)

// Snapshots hold the whole catalog, signing keys included, and raft's file
// snapshot store creates them with the process umask (0644 by default).
// privateSnapshots tightens every snapshot as it is completed; tighten
// does the same to a data dir made by an older version.

// privateSnapshots wraps a raft.FileSnapshotStore so that every snapshot
// directory is 0700 and every file in it 0600.
type privateSnapshots struct {
	*raft.FileSnapshotStore
	dir string // the store's snapshots directory
}

func (p privateSnapshots) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration,
	configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := p.FileSnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		return nil, err
	}
	_ = tighten(filepath.Join(p.dir, sink.ID()+".tmp"))
	return privateSink{SnapshotSink: sink, dir: p.dir}, nil
}

type privateSink struct {
	raft.SnapshotSink
	dir string
}

func (s privateSink) Close() error {
	if err := s.SnapshotSink.Close(); err != nil {
		return err
	}
	return tighten(filepath.Join(s.dir, s.ID()))
}

// tighten makes every directory under root 0700 and every file 0600.
func tighten(root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		mode := os.FileMode(0o600)
		if d.IsDir() {
			mode = 0o700
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		return os.Chmod(path, mode)
	})
}
