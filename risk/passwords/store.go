package passwords

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"slices"
	"sync"

	"github.com/go-json-experiment/json"
)

// The corpus file format, version 1 (little-endian throughout):
//
//	header   64 bytes   magic "TRUSTDPW", version, mode, record size,
//	                    metadata length, record count, CRC-32C of the
//	                    metadata, the index, the records and the header
//	metadata JSON       Corpus (source, count semantics, built_at), padded
//	                    with zeros to a multiple of 8
//	index    (2^20+1)×8 record number where each prefix's range starts;
//	                    entry 2^20 is the record count
//	records  count×size the hash without its first two bytes (18 bytes for
//	                    SHA-1, 14 for NTLM), then a uint32 count; sorted by
//	                    hash, so prefix p's range is records[index[p]:index[p+1]]
//
// A range is one index lookup and one contiguous read: microseconds, from
// the page cache or one disk read, for any corpus size. The index is 8 MiB;
// the full Pwned Passwords SHA-1 corpus (about a billion hashes) is about
// 22 GB. Open checks the header, metadata and index (size, CRCs, monotonic
// index); the records' CRC is checked by Verify, a full scan.

const (
	magic         = "TRUSTDPW"
	formatVersion = 1
	headerSize    = 64
	indexSize     = (Buckets + 1) * 8
	// maxMetadata bounds the metadata block, so a corrupt length cannot
	// make Open allocate.
	maxMetadata = 16 << 10
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Count semantics of a corpus: what its counts mean. A client that shows
// "seen N times in breaches" must only do so for CountsBreach.
const (
	// CountsBreach: how many times the hash was seen in breach data (the
	// Pwned Passwords corpus).
	CountsBreach = "breach"
	// CountsRank: derived from the position in a ranked list of common
	// passwords (higher = more common); not a breach count.
	CountsRank = "rank"
	// CountsPresence: every listed hash has count 1; the list had no counts.
	CountsPresence = "presence"
)

// Corpus describes where a store's hashes and counts come from. It is kept
// in the file and returned with every answer.
type Corpus struct {
	Source         string `json:"source" required:"true" doc:"Where the hashes come from (the list, its version and licence, or the imported files)."`
	CountSemantics string `json:"count_semantics" required:"true" enum:"breach|rank|presence" doc:"What count means: breach = times seen in breach data (Pwned Passwords); rank = derived from the position in a ranked common-password list (higher is more common), NOT a breach count; presence = 1 for every listed hash."`
	Description    string `json:"description,omitempty" doc:"How the counts were derived, in words."`
	BuiltAt        string `json:"built_at,omitempty" doc:"When the store was built (RFC 3339), or empty."`
	Hashes         uint64 `json:"hashes" doc:"Number of hashes in the store."`
	Embedded       bool   `json:"embedded" doc:"true: the built-in default corpus; false: imported with trustctl passwords import."`
}

func validCounts(s string) bool {
	return s == CountsBreach || s == CountsRank || s == CountsPresence
}

// ErrCorrupt is returned for a file that is not a valid corpus of this
// version: wrong magic or version, a size, CRC or index that does not add
// up, or a record outside its range. Such a file is refused, never served.
var ErrCorrupt = errors.New("passwords: corrupt corpus file")

// Entry is one hash of a range and its count.
type Entry struct {
	Hash  Hash
	Count uint32
}

// Store is one opened corpus file of one mode. Its methods are safe for
// concurrent use; Close waits for lookups in flight.
type Store struct {
	mode   Mode
	corpus Corpus
	data   []byte // the whole file, mapped (or, embedded, in memory)
	unmap  func() error
	count  uint64
	index  []byte // view of data
	recs   []byte // view of data
	hdr    header

	mu     sync.RWMutex
	closed bool
}

type header struct {
	version  uint16
	mode     Mode
	recSize  uint8
	metaLen  uint32
	count    uint64
	metaCRC  uint32
	indexCRC uint32
	recsCRC  uint32
}

func (h *header) marshal() []byte {
	b := make([]byte, headerSize)
	copy(b, magic)
	binary.LittleEndian.PutUint16(b[8:], h.version)
	b[10] = byte(h.mode)
	b[11] = h.recSize
	binary.LittleEndian.PutUint32(b[12:], h.metaLen)
	binary.LittleEndian.PutUint64(b[16:], h.count)
	binary.LittleEndian.PutUint32(b[24:], h.metaCRC)
	binary.LittleEndian.PutUint32(b[28:], h.indexCRC)
	binary.LittleEndian.PutUint32(b[32:], h.recsCRC)
	binary.LittleEndian.PutUint32(b[36:], crc32.Checksum(b[:36], crcTable))
	return b
}

func parseHeader(b []byte) (header, error) {
	var h header
	if len(b) < headerSize || string(b[:8]) != magic {
		return h, fmt.Errorf("%w: not a trustd password corpus (bad magic)", ErrCorrupt)
	}
	if crc32.Checksum(b[:36], crcTable) != binary.LittleEndian.Uint32(b[36:]) {
		return h, fmt.Errorf("%w: header checksum mismatch", ErrCorrupt)
	}
	h.version = binary.LittleEndian.Uint16(b[8:])
	h.mode = Mode(b[10])
	h.recSize = b[11]
	h.metaLen = binary.LittleEndian.Uint32(b[12:])
	h.count = binary.LittleEndian.Uint64(b[16:])
	h.metaCRC = binary.LittleEndian.Uint32(b[24:])
	h.indexCRC = binary.LittleEndian.Uint32(b[28:])
	h.recsCRC = binary.LittleEndian.Uint32(b[32:])
	switch {
	case h.version != formatVersion:
		return h, fmt.Errorf("%w: format version %d, this build reads %d", ErrCorrupt, h.version, formatVersion)
	case !h.mode.valid():
		return h, fmt.Errorf("%w: unknown hash mode %d", ErrCorrupt, h.mode)
	case int(h.recSize) != h.mode.recordSize():
		return h, fmt.Errorf("%w: record size %d for %s", ErrCorrupt, h.recSize, h.mode)
	case h.metaLen == 0 || h.metaLen > maxMetadata:
		return h, fmt.Errorf("%w: metadata length %d", ErrCorrupt, h.metaLen)
	}
	return h, nil
}

func pad8(n int) int { return (n + 7) &^ 7 }

// OpenFile maps the corpus file at path read-only and checks it. The file must
// not be changed in place while open (import replaces it by rename, which
// leaves the open mapping intact).
func OpenFile(path string) (*Store, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() < headerSize+indexSize {
		return nil, fmt.Errorf("%w: %s: %d bytes is too short", ErrCorrupt, path, st.Size())
	}
	data, unmap, err := mapFile(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("passwords: map %s: %w", path, err)
	}
	s, err := newStore(data, unmap)
	if err != nil {
		_ = unmap()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// OpenBytes opens a corpus held in memory (the embedded default).
func OpenBytes(data []byte) (*Store, error) {
	return newStore(data, func() error { return nil })
}

func newStore(data []byte, unmap func() error) (*Store, error) {
	h, err := parseHeader(data)
	if err != nil {
		return nil, err
	}
	metaEnd := headerSize + pad8(int(h.metaLen))
	idxEnd := uint64(metaEnd) + indexSize
	if uint64(len(data)) < idxEnd || h.count > (uint64(len(data))-idxEnd)/uint64(h.recSize) || idxEnd+h.count*uint64(h.recSize) != uint64(len(data)) {
		return nil, fmt.Errorf("%w: file is %d bytes, header says %d records of %d bytes", ErrCorrupt, len(data), h.count, h.recSize)
	}
	meta := data[headerSize : headerSize+int(h.metaLen)]
	if crc32.Checksum(meta, crcTable) != h.metaCRC {
		return nil, fmt.Errorf("%w: metadata checksum mismatch", ErrCorrupt)
	}
	var c Corpus
	if err := json.Unmarshal(meta, &c); err != nil || !validCounts(c.CountSemantics) || c.Source == "" {
		return nil, fmt.Errorf("%w: metadata is not a valid corpus description", ErrCorrupt)
	}
	c.Hashes = h.count
	s := &Store{mode: h.mode, corpus: c, data: data, unmap: unmap, count: h.count, hdr: h,
		index: data[metaEnd:idxEnd], recs: data[idxEnd:]}
	if crc32.Checksum(s.index, crcTable) != h.indexCRC {
		return nil, fmt.Errorf("%w: index checksum mismatch", ErrCorrupt)
	}
	var prev uint64
	for p := 0; p <= Buckets; p++ {
		v := binary.LittleEndian.Uint64(s.index[8*p:])
		if v < prev || (p == 0 && v != 0) || v > h.count {
			return nil, fmt.Errorf("%w: index entry %d out of order", ErrCorrupt, p)
		}
		prev = v
	}
	if prev != h.count {
		return nil, fmt.Errorf("%w: index ends at %d, not at the record count %d", ErrCorrupt, prev, h.count)
	}
	return s, nil
}

// Mode is the store's hash mode.
func (s *Store) Mode() Mode { return s.mode }

// Corpus describes the store's source and count semantics.
func (s *Store) Corpus() Corpus { return s.corpus }

// Len is the number of hashes in the store.
func (s *Store) Len() uint64 { return s.count }

// errClosed is returned by lookups on a closed store.
var errClosed = errors.New("passwords: store closed")

// Range appends the entries whose hash starts with prefix (20 bits) to
// dst, in hash order. It allocates nothing when dst has room.
func (s *Store) Range(prefix uint32, dst []Entry) ([]Entry, error) {
	if prefix >= Buckets {
		return dst, fmt.Errorf("passwords: prefix %#x out of range", prefix)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return dst, errClosed
	}
	lo := binary.LittleEndian.Uint64(s.index[8*prefix:])
	hi := binary.LittleEndian.Uint64(s.index[8*prefix+8:])
	size := int(s.hdr.recSize)
	hb := s.mode.HashBytes()
	n := int(hi - lo)
	recs := s.recs[lo*uint64(size) : hi*uint64(size)]
	dst = slices.Grow(dst, n)
	out := dst[len(dst) : len(dst)+n]
	p0, p1, nib := byte(prefix>>12), byte(prefix>>4), byte(prefix&0xf)
	for i := range out {
		rec := recs[i*size : i*size+size]
		if rec[0]>>4 != nib {
			return dst, fmt.Errorf("%w: record %d is outside range %s", ErrCorrupt, lo+uint64(i), FormatPrefix(prefix))
		}
		e := &out[i]
		e.Hash = Hash{}
		e.Hash[0], e.Hash[1] = p0, p1
		copy(e.Hash[2:hb], rec)
		e.Count = binary.LittleEndian.Uint32(rec[hb-2:])
	}
	return dst[:len(dst)+n], nil
}

// Verify scans the whole store: the records' checksum, that every record
// lies in its prefix's range, and strict hash order (no duplicates). It
// reads the whole file; import runs it before publishing a store.
func (s *Store) Verify() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return errClosed
	}
	if crc32.Checksum(s.recs, crcTable) != s.hdr.recsCRC {
		return fmt.Errorf("%w: records checksum mismatch", ErrCorrupt)
	}
	size := int(s.hdr.recSize)
	hashLen := size - 4
	for p := uint32(0); p < Buckets; p++ {
		lo := binary.LittleEndian.Uint64(s.index[8*p:])
		hi := binary.LittleEndian.Uint64(s.index[8*p+8:])
		var prev []byte
		for r := lo; r < hi; r++ {
			rec := s.recs[r*uint64(size) : r*uint64(size)+uint64(hashLen)]
			if uint32(rec[0]>>4) != p&0xf {
				return fmt.Errorf("%w: record %d is outside range %s", ErrCorrupt, r, FormatPrefix(p))
			}
			if prev != nil && bytes.Compare(prev, rec) >= 0 {
				return fmt.Errorf("%w: records of range %s are not strictly sorted", ErrCorrupt, FormatPrefix(p))
			}
			prev = rec
		}
	}
	return nil
}

// Close unmaps the file after the lookups in flight finish; later lookups
// fail.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.index, s.recs, s.data = nil, nil, nil
	return s.unmap()
}
