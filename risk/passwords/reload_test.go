package passwords

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hasPassword reports whether the module's sha1 range of pw lists it, and
// with which count.
func hasPassword(t *testing.T, m *Module, pw string) (uint32, Corpus, bool) {
	t.Helper()
	h := SHA1.Hash(pw)
	res, err := m.Range(Request{Prefix: h.Hex(SHA1)[:5]})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res.Entries {
		if e.Hash == h {
			return e.Count, res.Corpus, true
		}
	}
	return 0, res.Corpus, false
}

// eventually polls cond for up to two seconds.
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

func TestANewImportIsServedWithoutARestart(t *testing.T) {
	dir := t.TempDir()
	if err := BuildFromList(dir, SHA1, []string{"first-corpus-only"}, Corpus{Source: "one", CountSemantics: CountsRank}); err != nil {
		t.Fatal(err)
	}
	var now atomic.Int64
	now.Store(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC).UnixNano())
	m, err := New(Config{Dir: dir, Now: func() time.Time { return time.Unix(0, now.Load()) }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, c, ok := hasPassword(t, m, "first-corpus-only"); !ok || c.Source != "one" {
		t.Fatal("first corpus not served")
	}
	// A reader goroutine keeps querying while the file is replaced: no
	// answer may fail, whichever store it reads.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var failures atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := m.Range(Request{Prefix: "5BAA6"}); err != nil {
				failures.Add(1)
			}
		}
	}()

	if err := BuildFromList(dir, SHA1, []string{"second-corpus-only"}, Corpus{Source: "two", CountSemantics: CountsBreach}); err != nil {
		t.Fatal(err)
	}
	if _, c, _ := hasPassword(t, m, "first-corpus-only"); c.Source != "one" {
		t.Fatal("switched before the check interval")
	}
	now.Add(int64(ReloadInterval))
	// The reader goroutine may be the query that runs the reload; others
	// keep the current store until it swaps, so poll briefly.
	if !eventually(func() bool { _, c, ok := hasPassword(t, m, "second-corpus-only"); return ok && c.Source == "two" }) {
		_, c, _ := hasPassword(t, m, "second-corpus-only")
		t.Fatalf("new import not served after the interval: %+v", c)
	}

	t.Run("a corrupt replacement is logged and the current corpus kept", func(t *testing.T) {
		tmp := filepath.Join(dir, "x")
		if err := os.WriteFile(tmp, []byte("not a corpus"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "sha1.pwd")); err != nil {
			t.Fatal(err)
		}
		now.Add(int64(ReloadInterval))
		if _, c, ok := hasPassword(t, m, "second-corpus-only"); !ok || c.Source != "two" {
			t.Fatal("a bad file replaced the working corpus")
		}
	})
	t.Run("a removed file gives way to the embedded default", func(t *testing.T) {
		if err := os.Remove(filepath.Join(dir, "sha1.pwd")); err != nil {
			t.Fatal(err)
		}
		now.Add(int64(ReloadInterval))
		if !eventually(func() bool { _, c, ok := hasPassword(t, m, "password"); return ok && c.Embedded }) {
			_, c, _ := hasPassword(t, m, "password")
			t.Fatalf("default not served: %+v", c)
		}
	})
	close(stop)
	wg.Wait()
	if n := failures.Load(); n != 0 {
		t.Fatalf("%d queries failed during the swaps", n)
	}
}
