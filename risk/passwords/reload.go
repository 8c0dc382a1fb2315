package passwords

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// ReloadInterval is how often a range query checks whether a corpus file
// was replaced (trustctl passwords import renames a new file over it).
// The check is one stat per mode, on the query path, at most this often.
const ReloadInterval = 10 * time.Second

// fileStamp identifies one version of a corpus file: a rename over it
// changes the inode, an in-place rewrite (never done by import) the size
// or time.
type fileStamp struct {
	exists  bool
	ino     uint64
	size    int64
	modTime time.Time
}

func stampOf(fi os.FileInfo) fileStamp {
	return fileStamp{exists: true, ino: inode(fi), size: fi.Size(), modTime: fi.ModTime()}
}

// openImported stats and opens mode's corpus file; a missing file is
// (zero stamp, nil, nil).
func (m *Module) openImported(mode Mode) (fileStamp, *Store, error) {
	path := filepath.Join(m.dir, mode.FileName())
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return fileStamp{}, nil, nil
	}
	if err != nil {
		return fileStamp{}, nil, err
	}
	st := stampOf(fi)
	s, err := OpenFile(path)
	if err == nil && s.Mode() != mode {
		_ = s.Close()
		err = fmt.Errorf("%w: %s holds %s hashes", ErrCorrupt, path, s.Mode())
	}
	if err != nil {
		return st, nil, err
	}
	c := s.Corpus()
	m.log.Info("password corpus opened", "mode", mode.String(), "hashes", c.Hashes, "counts", c.CountSemantics, "source", c.Source)
	return st, s, nil
}

// maybeReload runs Reload when ReloadInterval has passed since the last
// check; one caller does it, the others go on with the current stores.
func (m *Module) maybeReload() {
	next := m.nextCheck.Load()
	now := m.now().UnixNano()
	if next == 0 || now < next || !m.nextCheck.CompareAndSwap(next, now+int64(ReloadInterval)) {
		return
	}
	m.Reload()
}

// Reload switches each mode to the file now in the directory when it
// changed since it was opened: a new import is served, a removed file
// gives way to the embedded default. A new file that does not open is
// logged and the current store kept: a running node never stops serving
// because of a bad copy (at start, New refuses it instead).
func (m *Module) Reload() {
	m.reloadMu.Lock()
	defer m.reloadMu.Unlock()
	if m.dir == "" {
		return
	}
	for _, mode := range Modes {
		path := filepath.Join(m.dir, mode.FileName())
		var cur fileStamp
		if fi, err := os.Stat(path); err == nil {
			cur = stampOf(fi)
		} else if !errors.Is(err, os.ErrNotExist) {
			m.log.Error("password corpus check failed", "mode", mode.String(), "err", err)
			continue
		}
		if cur == m.stamps[mode] {
			continue
		}
		st, s, err := m.openImported(mode)
		if err != nil {
			m.log.Error("password corpus not reloaded; still serving the previous one", "mode", mode.String(), "path", path, "err", err)
			m.stamps[mode] = st // do not retry the same bad file every interval
			continue
		}
		m.stamps[mode] = st
		if s == nil {
			m.log.Warn("password corpus file removed; serving the embedded default", "mode", mode.String(), "path", path)
		}
		if old := m.imported[mode].Swap(s); old != nil {
			_ = old.Close() // waits for lookups in flight
		}
	}
}
