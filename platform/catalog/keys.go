package catalog

import (
	"fmt"
	"time"
)

// Signing keys in a cluster. A key reaches every node through Raft, but
// not at the same instant: a follower that lags would refuse a token
// signed with a key it has not applied yet. So a key added to a running
// cluster carries ActiveFrom = CreatedAt + KeyActivationDelay: every node
// can verify with it as soon as it is applied, and no node signs with it
// before the delay has passed, by which time a healthy follower has long
// applied it (followers apply within milliseconds; one that is further
// behind than the delay is not ready and serves no traffic). The first
// keys of a new cluster sign at once: no other node exists yet.

// KeyActivationDelay is how long after its creation a rotated key starts
// signing.
const KeyActivationDelay = 30 * time.Second

// SigningKeyAt returns the newest unretired key of purpose that is active
// at now. When none is active yet it returns the newest unretired key, so
// a cluster is never without a signing key.
func (c *Catalog) SigningKeyAt(purpose string, now time.Time) *SigningKey {
	var best, newest *SigningKey
	for _, k := range c.Keys {
		if k.Purpose != purpose || k.Retired {
			continue
		}
		if newest == nil || k.CreatedAt.After(newest.CreatedAt) {
			newest = k
		}
		if !k.ActiveFrom.After(now) && (best == nil || k.CreatedAt.After(best.CreatedAt)) {
			best = k
		}
	}
	if best == nil {
		return newest
	}
	return best
}

// KeyPending is the ActiveFrom of a rotated key that verifies but must not
// sign yet: ActivateSigningKey sets the real instant once every node has
// applied the key (two-phase publish).
var KeyPending = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// KeyRetention is how long a superseded key keeps verifying: far longer
// than any token, lease or receipt it signed lives.
const KeyRetention = 24 * time.Hour

// PendingKey returns the key of purpose added by a rotation and not yet
// activated, if any.
func (c *Catalog) PendingKey(purpose string) *SigningKey {
	for _, k := range c.Keys {
		if k.Purpose == purpose && !k.Retired && k.ActiveFrom.Equal(KeyPending) {
			return k
		}
	}
	return nil
}

// ActivateSigningKey is the second phase of a rotation: key ID starts
// signing at At, every other signing key of its purpose is superseded
// (verify-only), and keys superseded more than KeyRetention before At are
// dropped, so rotations never grow the catalog without bound.
type ActivateSigningKey struct {
	ID string    `json:"key_id"`
	At time.Time `json:"at"`
}

func (*ActivateSigningKey) Kind() string { return "signing_key.activate" }
func (c *ActivateSigningKey) Apply(tx *Tx) (any, error) {
	var target *SigningKey
	for _, k := range tx.next.Keys {
		if k.ID == c.ID {
			target = k
		}
	}
	if target == nil {
		return nil, fmt.Errorf("%w: signing key %s", ErrNotFound, c.ID)
	}
	keys := make([]*SigningKey, 0, len(tx.next.Keys))
	var out *SigningKey
	for _, k := range tx.next.Keys {
		switch {
		case k.ID == c.ID:
			nk := *k
			nk.ActiveFrom, nk.SupersededAt = c.At, time.Time{}
			out = &nk
			keys = append(keys, &nk)
		case k.Purpose != target.Purpose:
			keys = append(keys, k)
		case !k.SupersededAt.IsZero() && k.SupersededAt.Before(c.At.Add(-KeyRetention)):
			// dropped: nothing it signed is still alive
		case k.SupersededAt.IsZero() && !k.ActiveFrom.Equal(KeyPending):
			nk := *k
			nk.SupersededAt = c.At
			keys = append(keys, &nk)
		default:
			keys = append(keys, k)
		}
	}
	tx.next.Keys = keys
	return out, nil
}
