package passwords

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// downloaderDir writes list as the downloader's per-prefix output: one
// file per prefix named ABCDE.txt, SUFFIX:COUNT lines, CRLF, unsorted
// inside the file (the importer must not rely on it), and a BOM on one.
func downloaderDir(t *testing.T, mode Mode, list map[string]uint32) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string][]string{}
	for pw, c := range list {
		hx := mode.Hash(pw).Hex(mode)
		files[hx[:5]] = append(files[hx[:5]], fmt.Sprintf("%s:%d", hx[5:], c))
	}
	first := true
	for p, lines := range files {
		sort.Sort(sort.Reverse(sort.StringSlice(lines)))
		body := strings.Join(lines, "\r\n") + "\r\n"
		if first {
			body = "\xef\xbb\xbf" + body
			first = false
		}
		if err := os.WriteFile(filepath.Join(dir, p+".txt"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func importList() map[string]uint32 {
	m := map[string]uint32{"password": 3303003, "123456": 37359195, "hunter2": 17043}
	for i := 0; i < 1500; i++ {
		m[fmt.Sprintf("imp-%d", i)] = uint32(i%97 + 1)
	}
	return m
}

// checkCorpus opens dir's corpus of mode and checks every password of list
// is in its range with its count, and nothing else is.
func checkCorpus(t *testing.T, dir string, mode Mode, list map[string]uint32) {
	t.Helper()
	s, err := OpenFile(filepath.Join(dir, mode.FileName()))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Verify(); err != nil {
		t.Fatal(err)
	}
	if s.Len() != uint64(len(list)) || s.Corpus().CountSemantics != CountsBreach {
		t.Fatalf("%d hashes (want %d), corpus %+v", s.Len(), len(list), s.Corpus())
	}
	for pw, c := range list {
		h := mode.Hash(pw)
		got, err := s.Range(h.Prefix(), nil)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range got {
			found = found || (e.Hash == h && e.Count == c)
		}
		if !found {
			t.Fatalf("%s: %s not found with count %d", mode, pw, c)
		}
	}
}

func TestImportReadsTheDownloaderFormats(t *testing.T) {
	list := importList()
	t.Run("a directory of per-prefix SUFFIX:COUNT files, sha1", func(t *testing.T) {
		out := t.TempDir()
		st, err := Import(downloaderDir(t, SHA1, list), out, ImportOptions{Mode: SHA1})
		if err != nil {
			t.Fatal(err)
		}
		if st.Hashes != uint64(len(list)) || st.Lines != uint64(len(list)) || st.Files == 0 {
			t.Fatalf("stats %+v", st)
		}
		checkCorpus(t, out, SHA1, list)
	})
	t.Run("a directory of per-prefix files, ntlm", func(t *testing.T) {
		out := t.TempDir()
		if _, err := Import(downloaderDir(t, NTLM, list), out, ImportOptions{Mode: NTLM}); err != nil {
			t.Fatal(err)
		}
		checkCorpus(t, out, NTLM, list)
	})
	t.Run("one big file of HASH:COUNT lines grouped by prefix, with padding rows skipped", func(t *testing.T) {
		var lines []string
		for pw, c := range list {
			lines = append(lines, fmt.Sprintf("%s:%d", SHA1.Hash(pw).Hex(SHA1), c))
		}
		sort.Strings(lines)
		// A count-0 row (as in a saved padded answer) is not a hash.
		lines = append(lines, "FFFFF00000000000000000000000000000000000:0")
		src := filepath.Join(t.TempDir(), "pwnedpasswords_sha1.txt")
		if err := os.WriteFile(src, []byte(strings.Join(lines, "\n")+"\n\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out := t.TempDir()
		st, err := Import(src, out, ImportOptions{Mode: SHA1, Source: "HIBP 2026-11", CountSemantics: CountsBreach})
		if err != nil {
			t.Fatal(err)
		}
		if st.ZeroSkipped != 1 || st.Files != 1 {
			t.Fatalf("stats %+v", st)
		}
		checkCorpus(t, out, SHA1, list)
	})
	t.Run("per-prefix files may hold full hashes and lowercase names", func(t *testing.T) {
		dir := t.TempDir()
		h := SHA1.Hash("password").Hex(SHA1)
		if err := os.WriteFile(filepath.Join(dir, "5baa6"), []byte(strings.ToLower(h)+":5\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out := t.TempDir()
		if _, err := Import(dir, out, ImportOptions{Mode: SHA1}); err != nil {
			t.Fatal(err)
		}
		checkCorpus(t, out, SHA1, map[string]uint32{"password": 5})
	})
}

func TestImportRefusesBadInputAndKeepsTheOldCorpus(t *testing.T) {
	pw := SHA1.Hash("password").Hex(SHA1)
	ab := SHA1.Hash("123456").Hex(SHA1) // 7C4A8…, after 5BAA6
	file := func(body string) func(t *testing.T) string {
		return func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "all.txt")
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	dir := func(files map[string]string) func(t *testing.T) string {
		return func(t *testing.T) string {
			d := t.TempDir()
			for n, b := range files {
				if err := os.WriteFile(filepath.Join(d, n), []byte(b), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			return d
		}
	}
	cases := []struct {
		name  string
		in    func(t *testing.T) string
		mode  Mode
		max   int
		input bool // ErrInput expected (else any error)
	}{
		{"a line without a colon", file(pw + "\n"), SHA1, 0, true},
		{"a hash that is not hex", file(strings.Replace(pw, "5", "G", 1) + ":1\n"), SHA1, 0, true},
		{"a sha1 hash imported as ntlm", file(pw + ":1\n"), NTLM, 0, true},
		{"a suffix alone in one big file", file(pw[5:] + ":1\n"), SHA1, 0, true},
		{"a negative count", file(pw + ":-1\n"), SHA1, 0, true},
		{"a signed count", file(pw + ":+1\n"), SHA1, 0, true},
		{"a count over 32 bits", file(pw + ":4294967296\n"), SHA1, 0, true},
		{"an empty count", file(pw + ":\n"), SHA1, 0, true},
		{"a very long line", file(pw + ":" + strings.Repeat("1", 300) + "\n"), SHA1, 0, true},
		{"prefixes going backwards in one big file", file(ab + ":1\n" + pw + ":1\n"), SHA1, 0, true},
		{"a hash listed twice", file(pw + ":1\n" + pw + ":2\n"), SHA1, 0, true},
		{"more hashes in a prefix than the bound", dir(map[string]string{"5BAA6.txt": pw[5:] + ":1\n1E4C9B93F3F0682250B6CF8331B7EE68FD9:1\n"}), SHA1, 1, true},
		{"a file not named by a prefix", dir(map[string]string{"notes.md": "hello"}), SHA1, 0, true},
		{"two files of one prefix", dir(map[string]string{"5BAA6": pw[5:] + ":1\n", "5baa6.txt": pw[5:] + ":1\n"}), SHA1, 0, true},
		{"a full hash in the wrong prefix file", dir(map[string]string{"00000.txt": pw + ":1\n"}), SHA1, 0, true},
		{"an empty directory", dir(map[string]string{}), SHA1, 0, true},
		{"a missing input", func(t *testing.T) string { return filepath.Join(t.TempDir(), "missing") }, SHA1, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name+" is refused", func(t *testing.T) {
			out := t.TempDir()
			if err := BuildFromList(out, tc.mode, []string{"old"}, Corpus{Source: "old", CountSemantics: CountsRank}); err != nil {
				t.Fatal(err)
			}
			_, err := Import(tc.in(t), out, ImportOptions{Mode: tc.mode, MaxPerPrefix: tc.max})
			if err == nil || (tc.input && !errors.Is(err, ErrInput)) {
				t.Fatalf("Import = %v", err)
			}
			s, err := OpenFile(filepath.Join(out, tc.mode.FileName()))
			if err != nil || s.Corpus().Source != "old" {
				t.Fatalf("the old corpus is gone: %v", err)
			}
			s.Close()
			if ents, _ := os.ReadDir(out); len(ents) != 1 {
				t.Fatalf("left behind: %v", ents)
			}
		})
	}
}
