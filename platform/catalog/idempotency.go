package catalog

import (
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/go-json-experiment/json"
)

// Admin idempotency keys: a create sent with an Idempotency-Key is
// wrapped in IdempotentCreate, which runs the create and records the key
// with the created record in the same log entry. A retry of a create
// whose answer was lost (a 503 after the entry committed, a cut
// connection) therefore finds the key, whichever node it reaches, and
// gets the record the first attempt created instead of a second one.
//
// Keys are kept per workspace (workspace creation under ""), at most
// MaxIdempotencyKeysPerWorkspace of them for IdempotencyRetention after
// their create; the oldest is dropped to make room, so no tenant grows
// the catalog without bound. A key is stored only as a hash that also
// binds the credential that sent it (IdempotencyKey.Lookup), never
// as sent; a secret the create showed once is kept only sealed under a
// key derived from the idempotency key itself (idempotency_key.go), so
// the catalog cannot reveal it without the caller's key.

// Bounds of the idempotency keys of one workspace.
const (
	MaxIdempotencyKeysPerWorkspace = 1000
	IdempotencyRetention           = 24 * time.Hour
)

// ErrIdempotencyKeyReused is returned when a key already recorded a
// create with another request (another body, another path).
var ErrIdempotencyKeyReused = errors.New("catalog: idempotency key reused with another request")

// IdempotencyRecord is the outcome of a create, kept under its key.
type IdempotencyRecord struct {
	// Fingerprint is the hash of the request the key was first sent
	// with (method, path and body).
	Fingerprint Hash `json:"fingerprint"`
	// Record is the JSON of the create's result, the record as created.
	Record []byte `json:"record"`
	// Sealed is the secret the create showed once, sealed by the
	// transport under a key derived from the idempotency key; empty when
	// there was none.
	Sealed  []byte    `json:"sealed,omitempty"`
	Expires time.Time `json:"expires"`
}

// IdempotentCreate runs Create once per Key within a workspace.
type IdempotentCreate struct {
	// WorkspaceID scopes the key; "" for workspace creation.
	WorkspaceID string `json:"workspace_id"`
	// Key is the hash of the credential and the idempotency key.
	Key         string `json:"key"`
	Fingerprint Hash   `json:"fingerprint"`
	Sealed      []byte `json:"sealed,omitempty"`
	// At is when the create was sent (the proposing node's clock): the
	// record expires IdempotencyRetention after it, on every node alike.
	At time.Time `json:"at"`
	// CreateKind and Create are the wrapped create command.
	CreateKind string `json:"create_kind"`
	Create     []byte `json:"create"`
}

// IdempotentResult is the result of an IdempotentCreate: the create's own
// result the first time, the record kept under the key on a replay.
type IdempotentResult struct {
	Replayed bool
	// Value is the create's result (first time only).
	Value any
	// Record and Sealed are what the first time kept (replay only).
	Record []byte
	Sealed []byte
}

// NewIdempotentCreate wraps create under key.
func NewIdempotentCreate(workspaceID, key string, fingerprint Hash, sealed []byte, at time.Time, create Command) (*IdempotentCreate, error) {
	body, err := Encode(create)
	if err != nil {
		return nil, err
	}
	return &IdempotentCreate{WorkspaceID: workspaceID, Key: key, Fingerprint: fingerprint, Sealed: sealed, At: at,
		CreateKind: create.Kind(), Create: body}, nil
}

func (*IdempotentCreate) Kind() string { return "idempotent.create" }

// Apply implements Command.
func (c *IdempotentCreate) Apply(tx *Tx) (any, error) {
	if c.WorkspaceID != "" && tx.next.Workspaces[c.WorkspaceID] == nil {
		return nil, fmt.Errorf("%w: workspace %s", ErrNotFound, c.WorkspaceID)
	}
	if r, err := tx.next.KnownIdempotentCreate(c.WorkspaceID, c.Key, c.Fingerprint, c.At); err != nil {
		return nil, err
	} else if r != nil {
		return &IdempotentResult{Replayed: true, Record: r.Record, Sealed: r.Sealed}, nil
	}
	if c.CreateKind == (*IdempotentCreate)(nil).Kind() {
		return nil, fmt.Errorf("%w: an idempotent create cannot wrap another", ErrConflict)
	}
	create, err := Decode(c.CreateKind, c.Create)
	if err != nil {
		return nil, err
	}
	v, err := create.Apply(tx)
	if err != nil {
		return nil, err // nothing created, nothing kept: a retry runs it again
	}
	rec, err := json.Marshal(v)
	if err != nil {
		rec = nil // cannot happen for catalog records; a replay then answers 500
	}
	keys := tx.idempotencyKeysOf(c.WorkspaceID)
	for k, r := range keys {
		if !c.At.Before(r.Expires) {
			delete(keys, k)
		}
	}
	for len(keys) >= MaxIdempotencyKeysPerWorkspace {
		delete(keys, oldestIdempotencyKey(keys))
	}
	keys[c.Key] = &IdempotencyRecord{Fingerprint: c.Fingerprint, Record: rec, Sealed: c.Sealed, Expires: c.At.Add(IdempotencyRetention)}
	return &IdempotentResult{Value: v}, nil
}

// KnownIdempotentCreate is the record a create under key (a lookup,
// IdempotencyKey.Lookup) kept in workspaceID, or nil when there is none
// or it expired before now; ErrIdempotencyKeyReused when another request
// than fingerprint made it. The transport asks it before a create, so a
// retry the node already knows is answered without proposing anything;
// Apply asks it again, on every node alike.
func (c *Catalog) KnownIdempotentCreate(workspaceID, key string, fingerprint Hash, now time.Time) (*IdempotencyRecord, error) {
	r := c.IdempotencyKeys[workspaceID][key]
	if r == nil || !now.Before(r.Expires) {
		return nil, nil
	}
	if !r.Fingerprint.Equal(fingerprint) {
		return nil, ErrIdempotencyKeyReused
	}
	return r, nil
}

// oldestIdempotencyKey is the key that expires first (ties by key, so
// every node drops the same one).
func oldestIdempotencyKey(keys map[string]*IdempotencyRecord) string {
	var out string
	var at time.Time
	for k, r := range keys {
		if out == "" || r.Expires.Before(at) || (r.Expires.Equal(at) && k < out) {
			out, at = k, r.Expires
		}
	}
	return out
}

// idempotencyKeysOf returns a workspace's keys, copied once per
// transaction for writing.
func (tx *Tx) idempotencyKeysOf(workspaceID string) map[string]*IdempotencyRecord {
	all := Writable(tx, "idempotency_keys", &tx.next.IdempotencyKeys)
	name := "idempotency_keys/" + workspaceID
	if !tx.cloned[name] {
		all[workspaceID] = maps.Clone(all[workspaceID])
		if all[workspaceID] == nil {
			all[workspaceID] = map[string]*IdempotencyRecord{}
		}
		tx.cloned[name] = true
	}
	return all[workspaceID]
}

// IdempotencyKeyCount is how many idempotency keys a workspace holds
// ("" for workspace creation; expired ones included until the next
// create of that workspace prunes them).
func (c *Catalog) IdempotencyKeyCount(workspaceID string) int {
	return len(c.IdempotencyKeys[workspaceID])
}

func deleteIdempotencyKeysOf(tx *Tx, workspaceID string) {
	if _, ok := tx.next.IdempotencyKeys[workspaceID]; ok {
		delete(Writable(tx, "idempotency_keys", &tx.next.IdempotencyKeys), workspaceID)
	}
}
