package passwords

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"

	"github.com/go-json-experiment/json"
)

// Writer builds a corpus file from hashes added in strictly increasing
// order. It streams the records to a temporary file beside the target and
// publishes it with one rename on Commit, so a reader sees the old corpus
// or the new one, never half of one. Its memory is the 8 MiB index plus a
// write buffer, whatever the corpus size.
type Writer struct {
	mode    Mode
	path    string
	f       *os.File
	bw      *bufio.Writer
	crc     hash.Hash32
	meta    []byte
	buckets []uint64 // records per prefix, turned into the index on Commit
	count   uint64
	last    Hash
	rec     []byte
	done    bool
}

// ErrOrder is returned by Add for a hash not strictly greater than the
// previous one (unsorted input, or a duplicate).
var ErrOrder = errors.New("passwords: hashes out of order or duplicated")

// Create starts a corpus of mode at path (its directory must exist).
func Create(path string, mode Mode, corpus Corpus) (*Writer, error) {
	if !mode.valid() {
		return nil, fmt.Errorf("passwords: unknown mode %d", mode)
	}
	if !validCounts(corpus.CountSemantics) || corpus.Source == "" {
		return nil, errors.New("passwords: a corpus needs a source and count semantics breach, rank or presence")
	}
	corpus.Hashes, corpus.Embedded = 0, false
	meta, err := json.Marshal(corpus)
	if err != nil {
		return nil, err
	}
	if len(meta) > maxMetadata {
		return nil, fmt.Errorf("passwords: corpus description is %d bytes, at most %d", len(meta), maxMetadata)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, err
	}
	w := &Writer{mode: mode, path: path, f: f, bw: bufio.NewWriterSize(f, 1<<20), crc: crc32.New(crcTable),
		meta: meta, buckets: make([]uint64, Buckets), rec: make([]byte, mode.recordSize())}
	// Header, metadata and index are written at their places on Commit;
	// records go after them from the start.
	if _, err := f.Seek(int64(headerSize+pad8(len(meta))+indexSize), 0); err != nil {
		w.Abort()
		return nil, err
	}
	return w, nil
}

// Add appends one hash. Hashes must come in strictly increasing order.
func (w *Writer) Add(h Hash, count uint32) error {
	if w.done {
		return errors.New("passwords: writer already finished")
	}
	hb := w.mode.HashBytes()
	if w.count > 0 && bytes.Compare(h[:hb], w.last[:hb]) <= 0 {
		return fmt.Errorf("%w: %s after %s", ErrOrder, h.Hex(w.mode), w.last.Hex(w.mode))
	}
	w.last = h
	copy(w.rec, h[2:hb])
	binary.LittleEndian.PutUint32(w.rec[hb-2:], count)
	if _, err := w.bw.Write(w.rec); err != nil {
		return err
	}
	w.crc.Write(w.rec)
	w.buckets[h.Prefix()]++
	w.count++
	return nil
}

// Len is the number of hashes added so far.
func (w *Writer) Len() uint64 { return w.count }

// Commit writes the index and header, syncs, checks the file opens, and
// renames it over path.
func (w *Writer) Commit() error {
	if w.done {
		return errors.New("passwords: writer already finished")
	}
	w.done = true
	err := w.finish()
	if err != nil {
		_ = w.f.Close()
		_ = os.Remove(w.f.Name())
		return err
	}
	return nil
}

func (w *Writer) finish() error {
	if err := w.bw.Flush(); err != nil {
		return err
	}
	index := make([]byte, indexSize)
	var at uint64
	for p := 0; p < Buckets; p++ {
		binary.LittleEndian.PutUint64(index[8*p:], at)
		at += w.buckets[p]
	}
	binary.LittleEndian.PutUint64(index[8*Buckets:], at)
	meta := make([]byte, pad8(len(w.meta)))
	copy(meta, w.meta)
	h := header{version: formatVersion, mode: w.mode, recSize: uint8(w.mode.recordSize()), metaLen: uint32(len(w.meta)),
		count: w.count, metaCRC: crc32.Checksum(w.meta, crcTable), indexCRC: crc32.Checksum(index, crcTable), recsCRC: w.crc.Sum32()}
	for _, part := range []struct {
		b   []byte
		off int64
	}{{h.marshal(), 0}, {meta, headerSize}, {index, int64(headerSize + len(meta))}} {
		if _, err := w.f.WriteAt(part.b, part.off); err != nil {
			return err
		}
	}
	if err := w.f.Sync(); err != nil {
		return err
	}
	tmp := w.f.Name()
	if err := w.f.Close(); err != nil {
		return err
	}
	s, err := OpenFile(tmp)
	if err != nil {
		return fmt.Errorf("passwords: the written corpus does not open: %w", err)
	}
	_ = s.Close()
	if err := os.Rename(tmp, w.path); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(w.path)); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// Abort discards the temporary file; the target is untouched.
func (w *Writer) Abort() {
	if w.done {
		return
	}
	w.done = true
	_ = w.f.Close()
	_ = os.Remove(w.f.Name())
}

// maxCount is the largest count a record holds.
const maxCount = math.MaxUint32
