package http

import (
	"context"
	"crypto/rand"
	"time"

	"github.com/google/uuid"

	"github.com/trustd/trustd/catalog"
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

func (s *Server) signingKeyRoutes() []Route {
	a := []Auth{AuthAdmin}
	return []Route{
		{Method: "GET", Path: "/signing-keys", Admin: true, ID: "listSigningKeys", Tag: "Admin", Auth: a,
			Summary: "List the cluster's signing keys and their state (never their secrets).",
			Result:  &SigningKeyList{}, Errors: adminErrors, Handle: s.admin(s.listSigningKeys)},
		{Method: "POST", Path: "/signing-keys/rotate", Admin: true, ID: "rotateSigningKeys", Tag: "Admin", Auth: a,
			Summary: "Rotate a signing key: the new key is published to every node before it signs; the old one keeps verifying for 24 hours.",
			Body:    &RotateKeysInput{}, Result: &SigningKeyView{}, Errors: append(adminErrors, ErrConflict), Handle: s.admin(s.rotateSigningKeys)},
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

func (s *Server) listSigningKeys(c *Call) {
	now := s.clock()
	out := SigningKeyList{Keys: []SigningKeyView{}}
	for _, k := range c.Catalog().Keys {
		if !k.Retired {
			out.Keys = append(out.Keys, keyView(k, now))
		}
	}
	c.ok(&out)
}

func (s *Server) rotateSigningKeys(c *Call) {
	var in RotateKeysInput
	if len(c.Ctx.Request.Body()) > 0 && !c.decode(&in) {
		return
	}
	if in.Purpose == "" {
		in.Purpose = catalog.KeyLive
	}
	if in.Purpose != catalog.KeyLive && in.Purpose != catalog.KeySandbox && in.Purpose != catalog.KeyReceipt {
		c.failErr(invalid("purpose", "must be live, sandbox or receipt"))
		return
	}
	key := c.Catalog().PendingKey(in.Purpose)
	if key == nil {
		secret := make([]byte, 32)
		_, _ = rand.Read(secret)
		k := catalog.SigningKey{ID: in.Purpose[:1] + uuid.NewString()[:7], Purpose: in.Purpose, Secret: secret,
			CreatedAt: s.clock().UTC(), ActiveFrom: catalog.KeyPending}
		if _, ok := c.apply(&catalog.AddSigningKey{Key: k}); !ok {
			return
		}
		key = &k
	}
	if !s.everyNodeApplied(s.store.Catalog().Index, 15*time.Second) {
		c.fail(ErrUnavailable, "not every node has applied the new key yet; it verifies but does not sign. Retry to finish the rotation.")
		return
	}
	v, ok := c.apply(&catalog.ActivateSigningKey{ID: key.ID, At: s.clock().UTC()})
	if !ok {
		return
	}
	c.ok(keyView(v.(*catalog.SigningKey), s.clock()))
}

// everyNodeApplied waits until every live node reports an applied Raft
// index of at least index. A single node (no cluster) has applied it.
func (s *Server) everyNodeApplied(index uint64, within time.Duration) bool {
	if s.cfg.Cluster == nil {
		return true
	}
	deadline := s.clock().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st := s.cfg.Cluster.Status(ctx, time.Second)
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
		if s.clock().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}
