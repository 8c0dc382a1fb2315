package passwords

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ImportOptions configures Import.
type ImportOptions struct {
	Mode Mode
	// Source and CountSemantics go into the corpus description that every
	// answer carries. CountSemantics defaults to breach: the Pwned
	// Passwords files' counts are breach prevalence counts.
	Source         string
	CountSemantics string
	// MaxPerPrefix bounds the hashes of one prefix held in memory while
	// they are sorted (default 1<<20; the real corpus has about 2,000).
	MaxPerPrefix int
	Now          time.Time
}

// ImportStats reports what an import read and wrote.
type ImportStats struct {
	Files       int
	Lines       uint64
	Hashes      uint64
	ZeroSkipped uint64 // count-0 lines (padding rows of a saved range answer)
}

// ErrInput is returned for input that is not Pwned Passwords data: a bad
// line, a file name that is not a prefix, unsorted prefixes, duplicates.
var ErrInput = errors.New("passwords: invalid import input")

// maxLine bounds one input line; the longest valid one is 40 hex digits, a
// colon and a 10-digit count.
const maxLine = 256

// Import reads the Pwned Passwords downloader's output at in — a directory
// of per-prefix files (named by the 5-digit prefix, optionally .txt; lines
// SUFFIX:COUNT or HASH:COUNT) or one file of HASH:COUNT lines grouped by
// prefix in ascending order, as the downloader writes it — and builds the
// corpus file of opt.Mode in outDir, replacing any previous one atomically.
// Memory stays bounded: one prefix's hashes at a time plus the index.
func Import(in, outDir string, opt ImportOptions) (ImportStats, error) {
	var st ImportStats
	if !opt.Mode.valid() {
		return st, fmt.Errorf("passwords: unknown mode")
	}
	if opt.CountSemantics == "" {
		opt.CountSemantics = CountsBreach
	}
	if opt.Source == "" {
		opt.Source = "Pwned Passwords downloader files (" + opt.Mode.String() + ")"
	}
	if opt.MaxPerPrefix <= 0 {
		opt.MaxPerPrefix = 1 << 20
	}
	if opt.Now.IsZero() {
		opt.Now = time.Now()
	}
	info, err := os.Stat(in)
	if err != nil {
		return st, err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return st, err
	}
	w, err := Create(filepath.Join(outDir, opt.Mode.FileName()), opt.Mode, Corpus{Source: opt.Source,
		CountSemantics: opt.CountSemantics, BuiltAt: opt.Now.UTC().Format(time.RFC3339),
		Description: "Imported with trustctl passwords import from " + filepath.Base(in) + "."})
	if err != nil {
		return st, err
	}
	imp := &importer{w: w, mode: opt.Mode, max: opt.MaxPerPrefix, cur: -1, st: &st}
	if info.IsDir() {
		err = imp.dir(in)
	} else {
		st.Files = 1
		err = imp.file(in, -1)
	}
	if err == nil {
		err = imp.flush()
	}
	if err != nil {
		w.Abort()
		return st, err
	}
	st.Hashes = w.Len()
	return st, w.Commit()
}

type importer struct {
	w    *Writer
	mode Mode
	max  int
	cur  int // prefix being gathered, -1 before the first
	buf  []Entry
	st   *ImportStats
}

func (imp *importer) dir(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	type pf struct {
		prefix uint32
		name   string
	}
	var files []pf
	seen := map[uint32]string{}
	for _, e := range ents {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p, ok := ParsePrefix(strings.TrimSuffix(e.Name(), ".txt"))
		if !ok {
			return fmt.Errorf("%w: %s: a per-prefix file is named by its 5 hex digits (ABCDE or ABCDE.txt)", ErrInput, e.Name())
		}
		if prev, dup := seen[p]; dup {
			return fmt.Errorf("%w: %s and %s hold the same prefix", ErrInput, prev, e.Name())
		}
		seen[p] = e.Name()
		files = append(files, pf{p, e.Name()})
	}
	if len(files) == 0 {
		return fmt.Errorf("%w: %s holds no prefix files", ErrInput, dir)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].prefix < files[j].prefix })
	for _, f := range files {
		imp.st.Files++
		if err := imp.file(filepath.Join(dir, f.name), int(f.prefix)); err != nil {
			return err
		}
	}
	return nil
}

// file reads one input file; prefix is the file's prefix for a per-prefix
// file, -1 for one big file of full hashes.
func (imp *importer) file(path string, prefix int) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return imp.read(f, filepath.Base(path), prefix)
}

func (imp *importer) read(r io.Reader, name string, prefix int) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), maxLine)
	full, suffix := imp.mode.HexLen(), imp.mode.SuffixLen()
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if n == 1 {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
		}
		line = bytes.TrimRight(line, "\r \t")
		if len(line) == 0 {
			continue
		}
		imp.st.Lines++
		bad := func(why string) error { return fmt.Errorf("%w: %s:%d: %s", ErrInput, name, n, why) }
		hexPart, countPart, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return bad("expected HASH:COUNT")
		}
		var h Hash
		switch {
		case len(hexPart) == full:
			if !parseHexInto(&h, 0, hexPart) {
				return bad("the hash is not hex")
			}
			if prefix >= 0 && int(h.Prefix()) != prefix {
				return bad("the hash does not start with the file's prefix " + FormatPrefix(uint32(prefix)))
			}
		case len(hexPart) == suffix && prefix >= 0:
			p := uint32(prefix)
			h[0], h[1], h[2] = byte(p>>12), byte(p>>4), byte(p<<4)
			if !parseHexInto(&h, PrefixLen, hexPart) {
				return bad("the suffix is not hex")
			}
		default:
			want := strconv.Itoa(full) + " hex digits"
			if prefix >= 0 {
				want = strconv.Itoa(suffix) + " or " + want
			}
			return bad(fmt.Sprintf("a %s hash has %s, this one %d (wrong --mode?)", imp.mode, want, len(hexPart)))
		}
		if len(countPart) == 0 || len(countPart) > 10 {
			return bad("the count is not a decimal number")
		}
		count, err := strconv.ParseUint(string(countPart), 10, 64)
		if err != nil || countPart[0] == '+' || count > maxCount {
			return bad("the count is not a decimal number up to 4294967295")
		}
		if count == 0 {
			imp.st.ZeroSkipped++
			continue
		}
		if err := imp.add(h, uint32(count), bad); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("%w: %s: a line is longer than %d bytes", ErrInput, name, maxLine)
		}
		return err
	}
	return nil
}

func (imp *importer) add(h Hash, count uint32, bad func(string) error) error {
	p := int(h.Prefix())
	switch {
	case p < imp.cur:
		return bad("prefix " + FormatPrefix(uint32(p)) + " after " + FormatPrefix(uint32(imp.cur)) + ": one big file must be grouped by prefix in ascending order, as the downloader writes it")
	case p > imp.cur:
		if err := imp.flush(); err != nil {
			return err
		}
		imp.cur = p
	}
	if len(imp.buf) >= imp.max {
		return bad(fmt.Sprintf("more than %d hashes with prefix %s", imp.max, FormatPrefix(uint32(p))))
	}
	imp.buf = append(imp.buf, Entry{Hash: h, Count: count})
	return nil
}

// flush sorts the gathered prefix and writes it; a hash listed twice is
// refused (its counts cannot be told apart, and summing them would invent
// a count).
func (imp *importer) flush() error {
	if len(imp.buf) == 0 {
		return nil
	}
	hb := imp.mode.HashBytes()
	sort.Slice(imp.buf, func(i, j int) bool { return bytes.Compare(imp.buf[i].Hash[:hb], imp.buf[j].Hash[:hb]) < 0 })
	for i, e := range imp.buf {
		if i > 0 && e.Hash == imp.buf[i-1].Hash {
			return fmt.Errorf("%w: hash %s is listed twice", ErrInput, e.Hash.Hex(imp.mode))
		}
		if err := imp.w.Add(e.Hash, e.Count); err != nil {
			return err
		}
	}
	imp.buf = imp.buf[:0]
	return nil
}
