package token

import "sync"

// Keyring caches a *Key per signing-key id, so the HMAC pads and the AEAD
// of a key are built once per process. A key's secret never changes under
// its id (the catalog refuses a duplicate id), so an entry is never stale;
// whether a key is still usable is the caller's lookup, not the cache's.
type Keyring struct{ m sync.Map }

// Key returns the cached key for id, creating it from secret once.
func (r *Keyring) Key(id string, secret []byte) *Key {
	if v, ok := r.m.Load(id); ok {
		return v.(*Key)
	}
	v, _ := r.m.LoadOrStore(id, NewKey(id, secret))
	return v.(*Key)
}
