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
	// index is the Raft index the transaction commits at (0 outside the
	// FSM); ringTouched is set by a membership command (nodes.go).
	index       uint64
	ringTouched bool
	// membershipOnly keeps the previous version's derived indexes.
	membershipOnly bool
}

// Begin starts a transaction on top of c.
func Begin(c *Catalog) *Tx {
	next := *c
	// The working copy caches no secrets: its indexes are rebuilt, and
	// its caches made, at Commit.
	next.siteSecrets, next.appSecrets = nil, nil
	return &Tx{next: &next, cloned: map[string]bool{}}
}

// BeginAt starts a transaction on top of c that commits at Raft index.
func BeginAt(c *Catalog, index uint64) *Tx {
	tx := Begin(c)
	tx.index = index
	return tx
}

// BeginMembership starts a transaction at Raft index that may only apply
// membership commands (IsMembership). The derived indexes and secret caches
// of c carry over: every node renews its liveness every second, and
// rebuilding every index (and emptying the hot paths' caches) for each
// renewal would cost the hot path for nothing.
func BeginMembership(c *Catalog, index uint64) *Tx {
	next := *c
	return &Tx{next: &next, cloned: map[string]bool{}, index: index, membershipOnly: true}
}

// Catalog returns the catalog as the transaction has built it so far.
// Reads through it see earlier commands of the same batch.
func (tx *Tx) Catalog() *Catalog { return tx.next }

// Commit finishes the transaction at Raft index and returns the new catalog.
func (tx *Tx) Commit(index uint64) *Catalog {
	tx.next.Index = index
	tx.commitRing(index)
	if !tx.membershipOnly {
		tx.next.ConfigIndex = index
		tx.next.reindex()
	}
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
