package catalog

import (
	"errors"
	"maps"
)

// ErrNotFound is returned by a command naming an entity that does not exist
// (or no longer exists when the command is applied).
var ErrNotFound = errors.New("catalog: not found")

// ErrConflict is returned by a command that would break a uniqueness rule.
var ErrConflict = errors.New("catalog: conflict")

// Tx builds the next Catalog from the current one. Tables are cloned on
// their first write in the transaction, so a batch of commands pays for
// each table it touches once.
type Tx struct {
	next   *Catalog
	cloned map[string]bool
}

// Begin starts a transaction on top of c.
func Begin(c *Catalog) *Tx {
	next := *c
	// The working copy caches no secrets: its indexes are rebuilt, and
	// its caches made, at Commit.
	next.siteSecrets, next.appSecrets = nil, nil
	return &Tx{next: &next, cloned: map[string]bool{}}
}

// Catalog returns the catalog as the transaction has built it so far.
// Reads through it see earlier commands of the same batch.
func (tx *Tx) Catalog() *Catalog { return tx.next }

// Commit finishes the transaction at Raft index and returns the new catalog.
func (tx *Tx) Commit(index uint64) *Catalog {
	tx.next.Index = index
	tx.next.reindex()
	c := tx.next
	tx.next = nil
	return c
}

// Writable returns m cloned once per transaction under name, for writing.
func Writable[K comparable, V any](tx *Tx, name string, m *map[K]V) map[K]V {
	if !tx.cloned[name] {
		*m = maps.Clone(*m)
		if *m == nil {
			*m = map[K]V{}
		}
		tx.cloned[name] = true
	}
	return *m
}

func (tx *Tx) workspaces() map[string]*Workspace {
	return Writable(tx, "workspaces", &tx.next.Workspaces)
}
