package catalog

import "time"

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
