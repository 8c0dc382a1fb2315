package passwords

import (
	"bytes"
	"compress/gzip"
	"embed"
	"fmt"
	"io"
)

// The default corpus is built at build time (go generate) from a ranked
// list of common passwords and embedded, so a node answers ranges out of
// the box. Its counts are derived from rank, NOT breach counts: see
// DefaultSource and DESIGN.md. Import the Pwned Passwords corpus with
// trustctl passwords import for breach counts.
//
//go:generate go run ./internal/gendefault -list ../../test/system/passwords/node_modules/@zxcvbn-ts/language-common/src/passwords.json -out default

//go:embed default/sha1.pwd.gz default/ntlm.pwd.gz
var defaultFiles embed.FS

// DefaultListVersion names the list the default corpus is built from.
const DefaultListVersion = "@zxcvbn-ts/language-common 4.1.3"

// DefaultCorpus is the description stored in the embedded corpus files.
func DefaultCorpus(listLen int) Corpus {
	return Corpus{
		Source: "Built-in default: the " + fmt.Sprint(listLen) + " ranked common passwords of the npm package " +
			DefaultListVersion + " (src/passwords.json; MIT licence, (c) 2012-2016 Dan Wheeler and Dropbox, Inc., (c) 2021 @zxcvbn-ts), " +
			"hashed at build time. Not breach data.",
		CountSemantics: CountsRank,
		Description: fmt.Sprintf("count = %d + 1 - rank: the list's most common password (rank 1) has %d, its last has 1. "+
			"It orders passwords by how common the list says they are; it is NOT the number of times a password was seen in breaches. "+
			"Import the Pwned Passwords corpus (trustctl passwords import) for breach counts.", listLen, listLen),
	}
}

// OpenDefault decompresses the embedded corpus of mode into memory (about
// 9 MiB, most of it the prefix index) and opens it.
func OpenDefault(mode Mode) (*Store, error) {
	gz, err := defaultFiles.ReadFile("default/" + mode.FileName() + ".gz")
	if err != nil {
		return nil, fmt.Errorf("passwords: embedded %s corpus missing: %w", mode, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("passwords: embedded %s corpus: %w", mode, err)
	}
	data, err := io.ReadAll(io.LimitReader(zr, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("passwords: embedded %s corpus: %w", mode, err)
	}
	s, err := OpenBytes(data)
	if err != nil {
		return nil, fmt.Errorf("passwords: embedded %s corpus: %w", mode, err)
	}
	if s.Mode() != mode {
		return nil, fmt.Errorf("%w: embedded %s corpus holds %s", ErrCorrupt, mode, s.Mode())
	}
	s.corpus.Embedded = true
	return s, nil
}
