package passwords

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trustd/trustd/platform/errcode"
)

// Domain errors of the range operations.
var (
	ErrInvalidPrefix = errcode.New("invalid-prefix", errcode.Invalid,
		"prefix must be exactly 5 hexadecimal characters (the first 5 of the SHA-1 or NTLM hash; either case)")
	ErrInvalidMode = errcode.New("invalid-mode", errcode.Invalid, "mode must be sha1 or ntlm")
	ErrUnavailable = errcode.ErrUnavailable.Detail(
		"the password corpus cannot be read on this node; back off and retry")
)

// Errors lists every code the module returns, for the contract.
var Errors = []*errcode.Code{ErrInvalidPrefix, ErrInvalidMode, ErrUnavailable.Code}

// Padding bounds: like Pwned Passwords' Add-Padding, an answer is filled
// with random count-0 suffixes up to a random size in [PadMin, PadMax], so
// its length does not tell which prefix was asked.
const (
	PadMin = 800
	PadMax = 1000
)

// Request is one range query.
type Request struct {
	Prefix  string // 5 hex digits
	Mode    string // "sha1" (default) or "ntlm"
	Padding bool
}

// Result is the answer of a range query.
type Result struct {
	Prefix string // uppercase
	Mode   Mode
	// Entries are in suffix order; padding entries have Count 0 and are
	// mixed in, indistinguishable but for their count.
	Entries []Entry
	Corpus  Corpus
}

// Module answers range queries from one corpus per mode: the file imported
// into the passwords directory when there is one, else the embedded
// default. It notices a new import (a rename over the file) within
// ReloadInterval and switches to it without a restart.
type Module struct {
	dir      string
	imported [3]atomic.Pointer[Store] // by Mode; nil: use the default
	defaults [3]lazyStore
	rand     io.Reader
	log      *slog.Logger
	now      func() time.Time

	// reload state, see reload.go.
	nextCheck atomic.Int64
	reloadMu  sync.Mutex
	stamps    [3]fileStamp
}

// lazyStore loads an embedded default corpus on first use, so a node that
// never answers a range never spends the memory.
type lazyStore struct {
	once sync.Once
	s    *Store
	err  error
}

// Config configures New.
type Config struct {
	// Dir holds the imported corpus files (sha1.pwd, ntlm.pwd); "" or a
	// missing file means the embedded default for that mode.
	Dir string
	// Rand is the source of padding (default crypto/rand).
	Rand io.Reader
	Log  *slog.Logger
	// Now is the clock of the reload checks (default time.Now).
	Now func() time.Time
}

// New opens the imported corpus of every mode found in cfg.Dir. A corrupt
// imported file is an error: the node must not silently fall back to the
// small default when an operator installed the full corpus. The embedded
// default of a mode without an imported file is loaded on first use.
func New(cfg Config) (*Module, error) {
	m := &Module{dir: cfg.Dir, rand: cfg.Rand, log: cfg.Log, now: cfg.Now}
	if m.rand == nil {
		m.rand = rand.Reader
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if m.now == nil {
		m.now = time.Now
	}
	if cfg.Dir == "" {
		return m, nil
	}
	for _, mode := range Modes {
		st, s, err := m.openImported(mode)
		if err != nil {
			m.Close()
			return nil, err
		}
		m.stamps[mode] = st
		if s != nil {
			m.imported[mode].Store(s)
		}
	}
	m.nextCheck.Store(m.now().Add(ReloadInterval).UnixNano())
	return m, nil
}

// store is the corpus answering mode.
func (m *Module) store(mode Mode) (*Store, error) {
	if s := m.imported[mode].Load(); s != nil {
		return s, nil
	}
	d := &m.defaults[mode]
	d.once.Do(func() { d.s, d.err = OpenDefault(mode) })
	return d.s, d.err
}

// Corpus describes the corpus answering mode.
func (m *Module) Corpus(mode Mode) (Corpus, error) {
	s, err := m.store(mode)
	if err != nil {
		return Corpus{}, err
	}
	return s.Corpus(), nil
}

// Range answers one range query.
func (m *Module) Range(req Request) (Result, error) {
	mode, ok := ParseMode(req.Mode)
	if !ok {
		return Result{}, ErrInvalidMode
	}
	p, ok := ParsePrefix(req.Prefix)
	if !ok {
		return Result{}, ErrInvalidPrefix
	}
	m.maybeReload()
	var res Result
	for attempt := 0; ; attempt++ {
		s, err := m.store(mode)
		if err != nil {
			m.log.Error("password corpus unavailable", "mode", mode.String(), "err", err)
			return Result{}, ErrUnavailable
		}
		res = Result{Prefix: FormatPrefix(p), Mode: mode, Corpus: s.Corpus()}
		res.Entries, err = s.Range(p, nil)
		if errors.Is(err, errClosed) && attempt == 0 {
			continue // a reload replaced the store between load and read
		}
		if err != nil {
			m.log.Error("password corpus read failed", "mode", mode.String(), "err", err)
			return Result{}, ErrUnavailable
		}
		break
	}
	var err error
	if req.Padding {
		if res.Entries, err = m.pad(p, mode, res.Entries); err != nil {
			return Result{}, ErrUnavailable.With("no randomness for padding")
		}
	}
	return res, nil
}

// pad adds random count-0 hashes of prefix p until the answer holds a
// random number of entries in [PadMin, PadMax] (never removing real ones),
// then sorts so padding is not told apart by position.
func (m *Module) pad(p uint32, mode Mode, real []Entry) ([]Entry, error) {
	var nb [2]byte
	if _, err := io.ReadFull(m.rand, nb[:]); err != nil {
		return nil, err
	}
	target := PadMin + int(binary.LittleEndian.Uint16(nb[:]))%(PadMax-PadMin+1)
	if len(real) >= target {
		return real, nil
	}
	hb := mode.HashBytes()
	seen := make(map[Hash]struct{}, target)
	for _, e := range real {
		seen[e.Hash] = struct{}{}
	}
	out := real
	buf := make([]byte, (target-len(real))*hb)
	for len(out) < target {
		if _, err := io.ReadFull(m.rand, buf); err != nil {
			return nil, err
		}
		for off := 0; off+hb <= len(buf) && len(out) < target; off += hb {
			var h Hash
			copy(h[:hb], buf[off:off+hb])
			h[0], h[1] = byte(p>>12), byte(p>>4)
			h[2] = byte(p<<4) | h[2]&0x0f
			if _, dup := seen[h]; dup {
				continue
			}
			seen[h] = struct{}{}
			out = append(out, Entry{Hash: h})
		}
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i].Hash[:hb], out[j].Hash[:hb]) < 0 })
	return out, nil
}

// AppendText appends the HIBP text form of the entries: SUFFIX:COUNT lines
// separated by CRLF, uppercase, no trailing line break.
func AppendText(dst []byte, mode Mode, entries []Entry) []byte {
	for i, e := range entries {
		if i > 0 {
			dst = append(dst, '\r', '\n')
		}
		dst = e.Hash.AppendSuffix(dst, mode)
		dst = append(dst, ':')
		dst = appendUint(dst, e.Count)
	}
	return dst
}

func appendUint(dst []byte, v uint32) []byte {
	var b [10]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return append(dst, b[i:]...)
}

// Close closes the imported stores (lookups in flight finish first; later
// ones answer ErrUnavailable). The embedded defaults live in memory and
// need no closing.
func (m *Module) Close() {
	m.reloadMu.Lock()
	defer m.reloadMu.Unlock()
	for i := range m.imported {
		if s := m.imported[i].Swap(nil); s != nil {
			_ = s.Close()
		}
	}
	m.dir = "" // no reloads after Close
}
