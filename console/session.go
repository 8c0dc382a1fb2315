package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"sync"
	"time"
)

// A session is server-side state held in this node's memory: the browser
// holds only a random id. Sessions are per node — a load balancer must
// keep a browser on one node (or the operator logs in again on another),
// and a node restart logs everyone out. That is deliberate: nothing a
// console login creates is replicated through Raft.

// session is one logged-in browser.
type session struct {
	// csrf is the synchronizer token every form of this session carries.
	csrf string
	// principal is who the session acts as; for a console user its role
	// is refreshed from the catalog at every request.
	principal Principal
	created   time.Time
	seen      time.Time
}

// sessions is the bounded store. Ids are kept only as SHA-256 digests, so
// a memory dump or a timing leak of the map lookup does not reveal a live
// cookie value.
type sessions struct {
	mu       sync.Mutex
	byDigest map[[32]byte]*session
	max      int
	idle     time.Duration
	absolute time.Duration
}

func newSessions(max int, idle, absolute time.Duration) *sessions {
	return &sessions{byDigest: map[[32]byte]*session{}, max: max, idle: idle, absolute: absolute}
}

// randomToken returns 32 random bytes, base64url encoded (43 characters).
func randomToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("console: crypto/rand failed: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func digest(id string) [32]byte { return sha256.Sum256([]byte(id)) }

// expired reports whether s is past its idle or absolute expiry at now.
func (st *sessions) expired(s *session, now time.Time) bool {
	return now.Sub(s.seen) >= st.idle || now.Sub(s.created) >= st.absolute
}

// create starts a session and returns its id. When the store is full,
// expired sessions are dropped first, then the least recently used one.
func (st *sessions) create(p Principal, now time.Time) (string, *session) {
	id := randomToken()
	s := &session{csrf: randomToken(), principal: p, created: now, seen: now}
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.byDigest) >= st.max {
		var oldest [32]byte
		var oldestSeen time.Time
		first := true
		for k, v := range st.byDigest {
			if st.expired(v, now) {
				delete(st.byDigest, k)
				continue
			}
			if first || v.seen.Before(oldestSeen) {
				oldest, oldestSeen, first = k, v.seen, false
			}
		}
		if len(st.byDigest) >= st.max && !first {
			delete(st.byDigest, oldest)
		}
	}
	st.byDigest[digest(id)] = s
	return id, s
}

// get returns the live session of id and refreshes its idle expiry; an
// expired session is destroyed and nil returned.
func (st *sessions) get(id string, now time.Time) *session {
	if id == "" {
		return nil
	}
	d := digest(id)
	st.mu.Lock()
	defer st.mu.Unlock()
	s := st.byDigest[d]
	if s == nil {
		return nil
	}
	if st.expired(s, now) {
		delete(st.byDigest, d)
		return nil
	}
	s.seen = now
	return s
}

// destroy ends the session of id.
func (st *sessions) destroy(id string) {
	st.mu.Lock()
	delete(st.byDigest, digest(id))
	st.mu.Unlock()
}

// len is the number of sessions held (live or not yet swept).
func (st *sessions) len() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.byDigest)
}

// validCSRF compares a submitted token with the session's in constant time.
func (s *session) validCSRF(got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) == 1
}
