// Package backup owns the format of a trustd backup: the archive a node
// produces from its replicated state (Archive) and the encrypted file an
// operator keeps (Seal, Open). It never talks to Raft or the network and
// imports nothing of ours, so trustctl reads and writes the file without
// linking a node.
package backup

import (
	"errors"
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Format names the archive layout; a node refuses any other.
const Format = "trustd-snapshot/1"

// ErrFormat is returned for an archive that is not one a node wrote.
var ErrFormat = errors.New("backup: not a trustd snapshot archive")

// Meta describes what an archive holds. It travels inside the encrypted
// file, so reading it needs the key.
type Meta struct {
	// Index is the Raft log index of the last command the catalog holds;
	// Term the leader's term when it was taken.
	Index uint64 `json:"index"`
	Term  uint64 `json:"term"`
	// TakenAt and TakenOn: when and by which node (any node: the
	// consistency point comes from a barrier through the leader).
	TakenAt string `json:"taken_at"`
	TakenOn string `json:"taken_on"`
	// Counts are records per table (nested tables summed over workspaces).
	Counts map[string]int `json:"counts"`
	// CatalogSHA256 is the hex SHA-256 of the catalog bytes.
	CatalogSHA256 string `json:"catalog_sha256"`
}

// Archive is the plaintext of a backup: its meta and the catalog as the
// Raft FSM serialises it.
type Archive struct {
	Format  string         `json:"format"`
	Meta    Meta           `json:"meta"`
	Catalog jsontext.Value `json:"catalog"`
}

// Encode serialises a.
func (a *Archive) Encode() ([]byte, error) {
	a.Format = Format
	return json.Marshal(a)
}

// Decode parses an archive and checks its format and catalog checksum.
func Decode(b []byte) (*Archive, error) {
	var a Archive
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	if a.Format != Format {
		return nil, fmt.Errorf("%w: format %q, this build reads %q", ErrFormat, a.Format, Format)
	}
	if len(a.Catalog) == 0 || a.Catalog.Kind() != '{' {
		return nil, fmt.Errorf("%w: no catalog object", ErrFormat)
	}
	if got := sum(a.Catalog); got != a.Meta.CatalogSHA256 {
		return nil, fmt.Errorf("%w: catalog checksum %s, meta says %s", ErrFormat, got, a.Meta.CatalogSHA256)
	}
	return &a, nil
}
