package passwords

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
)

// testList is a small generated ranked list with the known passwords first.
func testList(n int) []string {
	out := []string{"password", "123456", "hunter2"}
	for i := 0; len(out) < n; i++ {
		out = append(out, fmt.Sprintf("gen-%d", i))
	}
	return out
}

// mustBuild builds a rank-counted corpus of mode from list in a temp dir and
// opens it.
func mustBuild(t testing.TB, mode Mode, list []string) (*Store, string) {
	t.Helper()
	dir := t.TempDir()
	if err := BuildFromList(dir, mode, list, Corpus{Source: "test", CountSemantics: CountsRank}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, mode.FileName())
	s, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, path
}

func TestKnownHashes(t *testing.T) {
	// RFC 1320 test suite for MD4, and the HIBP known answers.
	for in, want := range map[string]string{
		"":    "31d6cfe0d16ae931b73c59d7e0c089c0",
		"a":   "bde52cb31de33e46245e05fbdbd6fb24",
		"abc": "a448017aaf21d8525fc10ae87aa6729d",
		"12345678901234567890123456789012345678901234567890123456789012345678901234567890": "e33b4ddc9c38f2199c3e7b164fcc0536",
	} {
		if got := md4Sum([]byte(in)); hex.EncodeToString(got[:]) != want {
			t.Errorf("md4(%q) = %x, want %s", in, got, want)
		}
	}
	if got := SHA1.Hash("password").Hex(SHA1); got != "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8" {
		t.Errorf("sha1 = %s", got)
	}
	if got := NTLM.Hash("password").Hex(NTLM); got != "8846F7EAEE8FB117AD06BDD830B7586C" {
		t.Errorf("ntlm = %s", got)
	}
	if got := NTLM.Hash("pässwörd€").Hex(NTLM); len(got) != 32 {
		t.Errorf("ntlm of non-ASCII = %s", got)
	}
}

func TestStoreLookups(t *testing.T) {
	list := testList(5000)
	for _, mode := range Modes {
		s, _ := mustBuild(t, mode, list)
		want := map[Hash]uint32{}
		for i, pw := range list {
			want[mode.Hash(pw)] = uint32(len(list) - i)
		}
		t.Run(mode.String()+": every listed password is found in its range with its count", func(t *testing.T) {
			for pw, rank := range map[string]int{"password": 0, "123456": 1, "hunter2": 2, "gen-4000": 4003} {
				h := mode.Hash(pw)
				got, err := s.Range(h.Prefix(), nil)
				if err != nil {
					t.Fatal(err)
				}
				found := false
				for _, e := range got {
					if e.Hash == h {
						found = e.Count == uint32(len(list)-rank)
					}
				}
				if !found {
					t.Fatalf("%s not found with count %d in %v", pw, len(list)-rank, got)
				}
			}
		})
		t.Run(mode.String()+": the ranges partition the corpus, sorted, each entry in its own prefix", func(t *testing.T) {
			total := 0
			var buf []Entry
			for p := uint32(0); p < Buckets; p++ {
				var err error
				buf, err = s.Range(p, buf[:0])
				if err != nil {
					t.Fatal(err)
				}
				for i, e := range buf {
					if e.Hash.Prefix() != p || want[e.Hash] != e.Count {
						t.Fatalf("prefix %s: entry %s count %d", FormatPrefix(p), e.Hash.Hex(mode), e.Count)
					}
					if i > 0 && bytes.Compare(buf[i-1].Hash[:], e.Hash[:]) >= 0 {
						t.Fatalf("prefix %s not sorted", FormatPrefix(p))
					}
				}
				total += len(buf)
			}
			if total != len(list) || s.Len() != uint64(len(list)) {
				t.Fatalf("%d entries over all ranges, Len %d, want %d", total, s.Len(), len(list))
			}
			if err := s.Verify(); err != nil {
				t.Fatal(err)
			}
		})
		t.Run(mode.String()+": a prefix out of range is an error, not a panic", func(t *testing.T) {
			if _, err := s.Range(Buckets, nil); err == nil {
				t.Fatal("prefix 2^20 accepted")
			}
		})
	}
}

func TestParsePrefixAndMode(t *testing.T) {
	cases := []struct {
		in   string
		want uint32
		ok   bool
	}{
		{"5BAA6", 0x5BAA6, true}, {"5baa6", 0x5BAA6, true}, {"00000", 0, true}, {"FFFFF", 0xFFFFF, true},
		{"5BAA", 0, false}, {"5BAA61", 0, false}, {"", 0, false}, {"5BAG6", 0, false}, {"5BA 6", 0, false},
		{"５BAA6", 0, false}, {"0x5BA", 0, false},
	}
	for _, c := range cases {
		got, ok := ParsePrefix(c.in)
		if ok != c.ok || got != c.want {
			t.Errorf("ParsePrefix(%q) = %x %v", c.in, got, ok)
		}
		if ok && FormatPrefix(got) != strings.ToUpper(c.in) {
			t.Errorf("FormatPrefix(%x) = %s", got, FormatPrefix(got))
		}
	}
	for in, want := range map[string]Mode{"": SHA1, "sha1": SHA1, "ntlm": NTLM, "SHA1": 0, "md5": 0} {
		if got, ok := ParseMode(in); got != want || ok != (want != 0) {
			t.Errorf("ParseMode(%q) = %v %v", in, got, ok)
		}
	}
}

// corrupt rewrites one part of a valid corpus file; recompute fixes the
// header CRC so the deeper checks are reached.
func TestCorruptFilesAreRefused(t *testing.T) {
	_, path := mustBuild(t, SHA1, testList(300))
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	metaLen := int(binary.LittleEndian.Uint32(good[12:]))
	idxOff := headerSize + pad8(metaLen)
	recOff := idxOff + indexSize
	fixHeader := func(b []byte) {
		binary.LittleEndian.PutUint32(b[36:], crcOf(b[:36]))
	}
	cases := []struct {
		name   string
		mutate func([]byte) []byte
		onOpen bool // refused by Open; otherwise by Verify or Range
	}{
		{"an empty file", func(b []byte) []byte { return nil }, true},
		{"a file cut short", func(b []byte) []byte { return b[:len(b)-5] }, true},
		{"a file with trailing bytes", func(b []byte) []byte { return append(b, 0) }, true},
		{"another magic", func(b []byte) []byte { b[0] = 'X'; return b }, true},
		{"a flipped header byte", func(b []byte) []byte { b[17] ^= 1; return b }, true},
		{"a future format version", func(b []byte) []byte { b[8] = 2; fixHeader(b); return b }, true},
		{"an unknown mode", func(b []byte) []byte { b[10] = 9; fixHeader(b); return b }, true},
		{"the record size of the other mode", func(b []byte) []byte { b[10] = byte(NTLM); fixHeader(b); return b }, true},
		{"a huge metadata length", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[12:], 1<<30); fixHeader(b); return b }, true},
		{"a record count that does not match the size", func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[16:], 1<<60)
			fixHeader(b)
			return b
		}, true},
		{"edited metadata", func(b []byte) []byte { b[headerSize+2] ^= 0x20; return b }, true},
		{"an edited index", func(b []byte) []byte { b[idxOff+8*100] ^= 1; return b }, true},
		{"an index out of order with a matching checksum", func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[idxOff+8*5:], 250)
			binary.LittleEndian.PutUint32(b[28:], crcOf(b[idxOff:recOff]))
			fixHeader(b)
			return b
		}, true},
		{"an edited record", func(b []byte) []byte { b[recOff+3] ^= 0x10; return b }, false},
		{"a record moved out of its range", func(b []byte) []byte { b[recOff] ^= 0x80; return b }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name+" is refused", func(t *testing.T) {
			b := tc.mutate(append([]byte(nil), good...))
			bad := filepath.Join(t.TempDir(), "sha1.pwd")
			if err := os.WriteFile(bad, b, 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := OpenFile(bad)
			if tc.onOpen {
				if err == nil {
					s.Close()
					t.Fatal("opened")
				}
				if len(b) > 0 && !errors.Is(err, ErrCorrupt) {
					t.Fatalf("error %v is not ErrCorrupt", err)
				}
				if _, err := OpenBytes(b); err == nil {
					t.Fatal("OpenBytes accepted it")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Verify(); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Verify = %v", err)
			}
		})
	}
	t.Run("a record outside its range is refused by Range too", func(t *testing.T) {
		b := append([]byte(nil), good...)
		b[recOff] ^= 0x80
		s, err := OpenBytes(b)
		if err != nil {
			t.Fatal(err)
		}
		var hit bool
		for p := uint32(0); p < Buckets && !hit; p++ {
			if _, err := s.Range(p, nil); errors.Is(err, ErrCorrupt) {
				hit = true
			}
		}
		if !hit {
			t.Fatal("no range refused the moved record")
		}
	})
	t.Run("a closed store answers an error, not a fault", func(t *testing.T) {
		s, err := OpenFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		if _, err := s.Range(0x5BAA6, nil); err == nil {
			t.Fatal("range on a closed store")
		}
	})
}

func crcOf(b []byte) uint32 { return crc32.Checksum(b, crcTable) }

func TestWriterRefusesDisorderAndKeepsTheOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sha1.pwd")
	if err := BuildFromList(dir, SHA1, []string{"old"}, Corpus{Source: "old", CountSemantics: CountsRank}); err != nil {
		t.Fatal(err)
	}
	w, err := Create(path, SHA1, Corpus{Source: "new", CountSemantics: CountsBreach})
	if err != nil {
		t.Fatal(err)
	}
	a, b := SHA1.Hash("a"), SHA1.Hash("b")
	if bytes.Compare(a[:], b[:]) > 0 {
		a, b = b, a
	}
	if err := w.Add(b, 1); err != nil {
		t.Fatal(err)
	}
	if err := w.Add(a, 1); !errors.Is(err, ErrOrder) {
		t.Fatalf("out of order: %v", err)
	}
	if err := w.Add(b, 1); !errors.Is(err, ErrOrder) {
		t.Fatalf("duplicate: %v", err)
	}
	w.Abort()
	s, err := OpenFile(path)
	if err != nil || s.Corpus().Source != "old" {
		t.Fatalf("the old corpus was not kept: %v", err)
	}
	s.Close()
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("temporary files left: %v", ents)
	}
	if _, err := Create(path, SHA1, Corpus{Source: "x", CountSemantics: "made-up"}); err == nil {
		t.Fatal("unknown count semantics accepted")
	}
}

func TestPaddingIsRandomSizedAndHidesNothingReal(t *testing.T) {
	dir := t.TempDir()
	list := testList(2000)
	if err := BuildFromList(dir, SHA1, list, Corpus{Source: "t", CountSemantics: CountsRank}); err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{Dir: dir, Rand: rand.NewChaCha8([32]byte{7})})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	sizes := map[int]bool{}
	for i := 0; i < 20; i++ {
		res, err := m.Range(Request{Prefix: "5baa6", Padding: true})
		if err != nil {
			t.Fatal(err)
		}
		n := len(res.Entries)
		if n < PadMin || n > PadMax {
			t.Fatalf("%d entries", n)
		}
		sizes[n] = true
		real := 0
		for j, e := range res.Entries {
			if e.Count > 0 {
				real++
				if e.Hash != SHA1.Hash("password") {
					t.Fatalf("unexpected real entry %s", e.Hash.Hex(SHA1))
				}
			}
			if e.Hash.Prefix() != 0x5BAA6 || (j > 0 && bytes.Compare(res.Entries[j-1].Hash[:], e.Hash[:]) >= 0) {
				t.Fatal("padding outside the prefix or out of order")
			}
		}
		if real != 1 || res.Prefix != "5BAA6" {
			t.Fatalf("%d real entries", real)
		}
	}
	if len(sizes) < 5 {
		t.Fatalf("padding sizes barely vary: %v", sizes)
	}
	text := string(AppendText(nil, SHA1, []Entry{{Hash: SHA1.Hash("password"), Count: 7}, {Hash: SHA1.Hash("password"), Count: 0}}))
	if text != "1E4C9B93F3F0682250B6CF8331B7EE68FD8:7\r\n1E4C9B93F3F0682250B6CF8331B7EE68FD8:0" {
		t.Fatalf("text form %q", text)
	}
}

func TestModuleErrorsAndSources(t *testing.T) {
	m, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, tc := range []struct {
		req  Request
		want error
	}{
		{Request{Prefix: "5BAA"}, ErrInvalidPrefix},
		{Request{Prefix: "5BAA6", Mode: "md5"}, ErrInvalidMode},
		{Request{Prefix: "GGGGG", Mode: "ntlm"}, ErrInvalidPrefix},
	} {
		if _, err := m.Range(tc.req); !errors.Is(err, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.req, err, tc.want)
		}
	}
	for _, mode := range Modes {
		c, err := m.Corpus(mode)
		if err != nil || !c.Embedded || c.CountSemantics != CountsRank || c.Hashes != 49233 || !strings.Contains(c.Description, "NOT the number") {
			t.Fatalf("default %s corpus: %+v %v", mode, c, err)
		}
	}
	t.Run("a corrupt imported file fails New instead of falling back", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "ntlm.pwd"), []byte("garbage"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := New(Config{Dir: dir}); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("New = %v", err)
		}
	})
	t.Run("a file of the other mode under a mode's name is refused", func(t *testing.T) {
		dir := t.TempDir()
		if err := BuildFromList(dir, NTLM, []string{"x"}, Corpus{Source: "t", CountSemantics: CountsRank}); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "ntlm.pwd"), filepath.Join(dir, "sha1.pwd")); err != nil {
			t.Fatal(err)
		}
		if _, err := New(Config{Dir: dir}); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("New = %v", err)
		}
	})
}

// TestEmbeddedDefaultIsTheListBuiltAtBuildTime rebuilds the corpus from
// the pinned npm list and compares it with the embedded one byte for byte
// (uncompressed): the embedded corpus is what the documented source gives.
func TestEmbeddedDefaultIsTheListBuiltAtBuildTime(t *testing.T) {
	listPath := "../../test/system/passwords/node_modules/@zxcvbn-ts/language-common/src/passwords.json"
	raw, err := os.ReadFile(listPath)
	if err != nil {
		t.Skip("skipping: the source list is not installed (run test/system/passwords/setup.sh)")
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, mode := range Modes {
		if err := BuildFromList(dir, mode, list, DefaultCorpus(len(list))); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(filepath.Join(dir, mode.FileName()))
		gz, _ := defaultFiles.ReadFile("default/" + mode.FileName() + ".gz")
		zr, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			t.Fatal(err)
		}
		want, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: the embedded corpus differs from the list's build; run go generate ./risk/passwords", mode)
		}
	}
}

// BenchmarkRange looks up ranges of two corpora on disk (mapped): 2 M
// random hashes (about 2 per range), and 1 M hashes packed into 1,024
// prefixes (about 1,000 per range, the size of a real Pwned Passwords
// range).
func BenchmarkRange(b *testing.B) {
	for _, bc := range []struct {
		name     string
		n        int
		prefixes uint32 // hashes fall in this many prefixes (spread evenly)
	}{{"2-per-range", 2_000_000, Buckets}, {"1000-per-range", 1_000_000, 1024}} {
		b.Run(bc.name, func(b *testing.B) {
			dir := b.TempDir()
			w, err := Create(filepath.Join(dir, "sha1.pwd"), SHA1, Corpus{Source: "bench", CountSemantics: CountsBreach})
			if err != nil {
				b.Fatal(err)
			}
			r := rand.New(rand.NewChaCha8([32]byte{1}))
			stride := Buckets / bc.prefixes
			hs := make([]Hash, bc.n)
			for i := range hs {
				for j := 0; j < 20; j += 4 {
					binary.LittleEndian.PutUint32(hs[i][j:], r.Uint32())
				}
				p := r.Uint32N(bc.prefixes) * stride
				hs[i][0], hs[i][1], hs[i][2] = byte(p>>12), byte(p>>4), byte(p<<4)|hs[i][2]&0x0f
			}
			sort.Slice(hs, func(i, j int) bool { return bytes.Compare(hs[i][:], hs[j][:]) < 0 })
			for i, h := range hs {
				if i > 0 && h == hs[i-1] {
					continue
				}
				if err := w.Add(h, 1+r.Uint32N(1000)); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Commit(); err != nil {
				b.Fatal(err)
			}
			s, err := OpenFile(filepath.Join(dir, "sha1.pwd"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			buf := make([]Entry, 0, 2048)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p := (uint32(i) * 7919 % bc.prefixes) * stride
				if buf, err = s.Range(p, buf[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
