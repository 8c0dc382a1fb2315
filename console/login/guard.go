// Package login decides what a console sign-in attempt must pass before
// its credential is checked: the per-address limit (refused, 429), and,
// once an account has had a few failed sign-ins, trustd's own widget
// (a challenge, never a refusal). It counts in trustd's own cluster-wide
// buckets and falls back to a node-local limiter when a bucket's owner
// cannot be reached. It never checks a credential and never sees HTTP.
//
// Why a challenge and not a lock: a per-account limit that refuses lets
// anyone who knows an email lock its owner out (60 wrong passwords from 60
// addresses, then the owner's right password is refused). Here what others
// do to an account can only make its owner tick the widget's box; the
// guessing itself stays bounded by the per-address limit and by the proof
// of work each widget token costs.
package login

import (
	"time"

	"github.com/trustd/trustd/platform/lib/ratelimit"
)

// Buckets is the cluster-wide token bucket the guard counts in (the
// rate-limit check's own bucket op on the key's owner node). Take takes
// cost tokens (0: only reads) and reports the tokens left; err when the
// owner cannot be reached.
type Buckets interface {
	Take(key string, cfg ratelimit.BucketConfig, cost int64) (ok bool, remaining int64, retryAfter time.Duration, err error)
}

// Policy is the guard's two budgets.
type Policy struct {
	// Address bounds attempts per client address, right credential or
	// not: past it, 429.
	Address ratelimit.BucketConfig
	// Failures is the failed sign-ins an account may have before its next
	// sign-in needs the widget; it refills one at a time.
	Failures ratelimit.BucketConfig
}

// DefaultPolicy: per address 20 attempts at once, then one every 3 s (an
// office behind one NAT shares it); per account 5 failures, then the
// widget until a failure has aged out (one a minute).
var DefaultPolicy = Policy{
	Address:  ratelimit.BucketConfig{Capacity: 20, RefillAmount: 1, RefillInterval: int64(3 * time.Second)},
	Failures: ratelimit.BucketConfig{Capacity: 5, RefillAmount: 1, RefillInterval: int64(time.Minute)},
}

// Outcome is what an attempt must do next.
type Outcome uint8

// The outcomes of Attempt.
const (
	// Proceed: check the credential (with the widget too where the
	// console always asks for it).
	Proceed Outcome = iota + 1
	// Challenge: the account has had too many failures; check the
	// credential only after a verified widget token.
	Challenge
	// Limited: the client address is over its limit; refuse (429) with
	// RetryAfter, whatever the credential.
	Limited
)

// Verdict is Attempt's answer.
type Verdict struct {
	Outcome    Outcome
	RetryAfter time.Duration
}

// Guard applies a Policy. It holds no state of its own beyond the
// node-local fallback.
type Guard struct {
	b     Buckets
	p     Policy
	now   func() time.Time
	local *local
}

// New returns a guard counting in b.
func New(b Buckets, p Policy, now func() time.Time) *Guard {
	if now == nil {
		now = time.Now
	}
	return &Guard{b: b, p: p, now: now, local: newLocal(10000)}
}

const (
	addressPrefix = "ip/"
	accountPrefix = "user/"
)

// Attempt takes one attempt from addr's budget and reads account's
// failures ("" for a credential that names no account: the admin token).
// A correct credential is never refused because of the account: at worst
// it needs the widget.
func (g *Guard) Attempt(addr, account string) Verdict {
	if ok, wait := g.take(addressPrefix+addr, g.p.Address, 1); !ok {
		return Verdict{Outcome: Limited, RetryAfter: wait}
	}
	if account != "" && g.challenged(account) {
		return Verdict{Outcome: Challenge}
	}
	return Verdict{Outcome: Proceed}
}

// Failed counts a failed sign-in for account. It reports whether the
// account's next sign-in needs the widget.
func (g *Guard) Failed(account string) bool {
	if account == "" {
		return false
	}
	ok, _ := g.take(accountPrefix+account, g.p.Failures, 1)
	return !ok || g.challenged(account)
}

// Challenged reports whether account's next sign-in needs the widget.
func (g *Guard) challenged(account string) bool {
	ok, _ := g.take(accountPrefix+account, g.p.Failures, 0)
	return !ok
}

// Limit takes one attempt of key from a budget of its own (for example a
// signed-in user's password change, which only that user's sessions can
// reach): false and the wait when it is spent.
func (g *Guard) Limit(key string, cfg ratelimit.BucketConfig) (bool, time.Duration) {
	return g.take(key, cfg, 1)
}

// take asks the cluster-wide bucket, or the node-local one when the
// owner cannot be reached. Cost 0 asks whether one token is there.
func (g *Guard) take(key string, cfg ratelimit.BucketConfig, cost int64) (bool, time.Duration) {
	ok, remaining, wait, err := g.b.Take(key, cfg, cost)
	if err == nil {
		if cost == 0 {
			return remaining >= 1, 0
		}
		return ok, wait
	}
	interval := time.Duration(cfg.RefillInterval / max(cfg.RefillAmount, 1))
	return g.local.take(key, interval, int(cfg.Capacity), int(cost), g.now())
}
