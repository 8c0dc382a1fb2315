package passwords

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/go-json-experiment/json"
)

// BuildFromList writes the corpus of mode for a ranked list of passwords
// (most common first) into dir, with count = len(list)+1-rank. Duplicate
// passwords keep their first (best) rank. It is how the embedded default
// is built, and how tests build small corpora.
func BuildFromList(dir string, mode Mode, list []string, corpus Corpus) error {
	seen := make(map[Hash]bool, len(list))
	entries := make([]Entry, 0, len(list))
	for i, pw := range list {
		h := mode.Hash(pw)
		if seen[h] {
			continue
		}
		seen[h] = true
		entries = append(entries, Entry{Hash: h, Count: uint32(len(list) - i)})
	}
	hb := mode.HashBytes()
	sort.Slice(entries, func(i, j int) bool { return bytes.Compare(entries[i].Hash[:hb], entries[j].Hash[:hb]) < 0 })
	w, err := Create(filepath.Join(dir, mode.FileName()), mode, corpus)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := w.Add(e.Hash, e.Count); err != nil {
			w.Abort()
			return fmt.Errorf("passwords: build %s: %w", mode, err)
		}
	}
	return w.Commit()
}

// GenerateDefault builds the embedded default corpus files (<mode>.pwd.gz)
// into outDir from the ranked JSON list at listPath. Deterministic: the
// same list gives the same bytes.
func GenerateDefault(listPath, outDir string) error {
	raw, err := os.ReadFile(listPath)
	if err != nil {
		return err
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return fmt.Errorf("passwords: %s is not a JSON array of strings: %w", listPath, err)
	}
	if len(list) == 0 {
		return fmt.Errorf("passwords: %s is empty", listPath)
	}
	tmp, err := os.MkdirTemp("", "pwdefault")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	for _, mode := range Modes {
		if err := BuildFromList(tmp, mode, list, DefaultCorpus(len(list))); err != nil {
			return err
		}
		data, err := os.ReadFile(filepath.Join(tmp, mode.FileName()))
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		if _, err := zw.Write(data); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(outDir, mode.FileName()+".gz"), buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}
