package api

import (
	"context"
	"crypto/rand"
	"time"

	"github.com/google/uuid"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/cluster"
	kernel "github.com/trustd/trustd/platform/http"
)

// Signing keys: listing (never the secrets) and rotation with a two-phase
// publish. Phase one adds the new key verify-only; phase two, once every
// live node reports it has applied the log past that key, makes it the
// signing key. So no node ever receives a token signed with a key it does
// not know, whatever the replication lag. If a node has not caught up in
// time the answer is 503 and the key stays verify-only; the next rotate
// call finishes the same key rather than adding another.

// SigningKeyView is one key, without its secret.
type SigningKeyView struct {
	KeyID        string     `json:"key_id" required:"true"`
	Purpose      string     `json:"purpose" required:"true" enum:"live|sandbox|receipt"`
	CreatedAt    time.Time  `json:"created_at" required:"true"`
	State        string     `json:"state" required:"true" enum:"pending|signing|verify_only" doc:"pending: known to nodes, not signing yet; signing: signs new tokens; verify_only: superseded, still verifies what it signed."`
	ActiveFrom   *time.Time `json:"active_from,omitempty"`
	SupersededAt *time.Time `json:"superseded_at,omitempty"`
}

// SigningKeyList is GET /admin/v1/signing-keys.
type SigningKeyList struct {
	Keys []SigningKeyView `json:"keys" required:"true"`
}

// RotateKeysInput is POST /admin/v1/signing-keys/rotate.
type RotateKeysInput struct {
	Purpose string `json:"purpose,omitempty" enum:"live|sandbox|receipt" doc:"Which keys to rotate (default live); receipt rotates the Ed25519 key of Trust API decision receipts."`
}

// keysAPI serves the signing-key admin operations.
type keysAPI struct {
	store   Store
	members Members
	now     func() time.Time
}

func (x keysAPI) routes() []kernel.Route {
	a := []kernel.Auth{kernel.AuthAdmin}
	return []kernel.Route{
		{Method: "GET", Path: "/signing-keys", Admin: true, ID: "listSigningKeys", Tag: "Admin", Auth: a,
			Summary: "List the cluster's signing keys and their state (never their secrets).",
			Result:  &SigningKeyList{}, Errors: kernel.AdminErrors(), Handle: kernel.AdminOnly(x.list)},
		{Method: "POST", Path: "/signing-keys/rotate", Admin: true, ID: "rotateSigningKeys", Tag: "Admin", Auth: a,
			Summary: "Rotate a signing key: the new key is published to every node before it signs; the old one keeps verifying for 24 hours.",
			Body:    &RotateKeysInput{}, Result: &SigningKeyView{}, Errors: append(kernel.AdminErrors(), kernel.ErrConflict), Handle: kernel.AdminOnly(x.rotate)},
	}
}

func keyView(k *catalog.SigningKey, now time.Time) SigningKeyView {
	v := SigningKeyView{KeyID: k.ID, Purpose: k.Purpose, CreatedAt: k.CreatedAt, State: "signing"}
	switch {
	case k.ActiveFrom.Equal(catalog.KeyPending) || k.ActiveFrom.After(now):
		v.State = "pending"
	case !k.SupersededAt.IsZero():
		v.State = "verify_only"
		t := k.SupersededAt
		v.SupersededAt = &t
	}
	if v.State != "pending" && !k.ActiveFrom.IsZero() {
		t := k.ActiveFrom
		v.ActiveFrom = &t
	}
	return v
}

func (x keysAPI) list(c *kernel.Call) {
	now := x.now()
	out := SigningKeyList{Keys: []SigningKeyView{}}
	for _, k := range c.Catalog().Keys {
		if !k.Retired {
			out.Keys = append(out.Keys, keyView(k, now))
		}
	}
	c.OK(&out)
}

func (x keysAPI) rotate(c *kernel.Call) {
	var in RotateKeysInput
	if len(c.Ctx.Request.Body()) > 0 && !c.Decode(&in) {
		return
	}
	if in.Purpose == "" {
		in.Purpose = catalog.KeyLive
	}
	if in.Purpose != catalog.KeyLive && in.Purpose != catalog.KeySandbox && in.Purpose != catalog.KeyReceipt {
		c.FailErr(kernel.Invalid("purpose", "must be live, sandbox or receipt"))
		return
	}
	key := c.Catalog().PendingKey(in.Purpose)
	if key == nil {
		secret := make([]byte, 32)
		_, _ = rand.Read(secret)
		k := catalog.SigningKey{ID: in.Purpose[:1] + uuid.NewString()[:7], Purpose: in.Purpose, Secret: secret,
			CreatedAt: x.now().UTC(), ActiveFrom: catalog.KeyPending}
		if _, ok := c.Apply(&catalog.AddSigningKey{Key: k}); !ok {
			return
		}
		key = &k
	}
	if !x.everyNodeApplied(x.store.Catalog().Index, 15*time.Second) {
		c.Fail(kernel.ErrUnavailable, "not every node has applied the new key yet; it verifies but does not sign. Retry to finish the rotation.")
		return
	}
	v, ok := c.Apply(&catalog.ActivateSigningKey{ID: key.ID, At: x.now().UTC()})
	if !ok {
		return
	}
	c.OK(keyView(v.(*catalog.SigningKey), x.now()))
}

// everyNodeApplied waits until every live node reports an applied Raft
// index of at least index. A single node (no cluster) has applied it.
func (x keysAPI) everyNodeApplied(index uint64, within time.Duration) bool {
	if x.members == nil {
		return true
	}
	deadline := x.now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st := x.members.Status(ctx, time.Second)
		cancel()
		all := true
		for _, n := range st.Nodes {
			if n.State == "failed" {
				continue // not serving: it catches up before it is ready again
			}
			if n.Health != "ok" || n.AppliedIndex < index {
				all = false
			}
		}
		if all {
			return true
		}
		if x.now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Members reports the cluster's nodes and their applied Raft indexes
// (cluster.Cluster).
type Members interface {
	Status(ctx context.Context, timeout time.Duration) cluster.Status
}
