package catalog

import (
	"crypto/subtle"
	"hash/maphash"
	"strings"
	"sync/atomic"
	"unsafe"
)

// secretCache remembers, for one catalog version, the secrets that were
// presented and matched a site or a mobile app, so that the hot paths
// (rate-limit check, siteverify) do not compute a SHA-256 per request.
//
// Exactness: a cache belongs to one immutable Catalog (reindex makes a new,
// empty one for every committed version; a transaction's working copy has
// none), so a rotation, a deletion or any other change is seen exactly as
// without the cache. A rotated-out secret's grace period is checked
// against now on every hit, as on the slow path.
//
// Bounds: only secrets that matched are stored, so random secrets never
// grow it; it is a fixed, direct-mapped table (a collision replaces the
// slot and the evicted secret takes the slow path again), sized from the
// number of sites or apps of the version.
//
// Comparison: the slot is chosen by a hash seeded per cache (an attacker
// can neither predict nor aim at a slot), and the presented secret is
// compared with the stored one in constant time.
//
// Keeping matched secrets in memory: we keep them. A secret that matched
// was presented by its owner in a request this process already holds in
// memory (request buffers); the copy here lives only in this process's
// memory, never in a snapshot, a log or the Raft log (the catalog still
// stores only hashes), and it is dropped with its catalog version at the
// next commit. Keeping a keyed digest instead would need a second
// cryptographic hash per request, which is what the cache removes.
type secretCache struct {
	seed  maphash.Seed
	mask  uint64
	slots []atomic.Pointer[secretEntry]
}

// secretEntry is one matched secret and what it resolved to.
type secretEntry struct {
	h      uint64
	secret string
	site   *Site
	app    *MobileApp
	// prev: the secret is the site's rotated-out one, valid until
	// site.PrevSecretUntil.
	prev bool
}

// maxSecretSlots bounds a cache's table (8 bytes a slot).
const maxSecretSlots = 4096

// newSecretCache sizes a table for n credentials (each may have a
// current and a rotated-out secret).
func newSecretCache(n int) *secretCache {
	size := 16
	for size < 2*n && size < maxSecretSlots {
		size <<= 1
	}
	return &secretCache{seed: maphash.MakeSeed(), mask: uint64(size - 1), slots: make([]atomic.Pointer[secretEntry], size)}
}

// get returns the entry secret matched, or nil.
func (sc *secretCache) get(secret string) *secretEntry {
	if sc == nil {
		return nil
	}
	h := maphash.String(sc.seed, secret)
	e := sc.slots[h&sc.mask].Load()
	if e == nil || e.h != h || subtle.ConstantTimeCompare(view(e.secret), view(secret)) != 1 {
		return nil
	}
	return e
}

// put remembers that secret matched site (prev: as its rotated-out
// secret) or app.
func (sc *secretCache) put(secret string, site *Site, app *MobileApp, prev bool) {
	if sc == nil {
		return
	}
	h := maphash.String(sc.seed, secret)
	// The caller's secret may be a view of a request buffer: copied.
	sc.slots[h&sc.mask].Store(&secretEntry{h: h, secret: strings.Clone(secret), site: site, app: app, prev: prev})
}

func view(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
