package ratelimit

import (
	"errors"
	"fmt"
)

// Decision is what a check tells the application to do. The values are
// ordered by strictness, so combining the outcomes of several policies is a
// maximum.
type Decision uint8

// Allow is the zero Decision: the fold over matching policies starts from
// it, and no matching policy means allow (spec 4.10 rule 5).
const (
	Allow Decision = iota
	Throttle
	Reject
)

// ErrDecision means a decision name is not allow, throttle or reject.
var ErrDecision = errors.New("ratelimit: unknown decision")

// Stricter returns the stricter of a and b. A value outside the known range
// counts as Reject, so corruption fails closed.
func Stricter(a, b Decision) Decision {
	return max(min(a, Reject), min(b, Reject))
}

// ParseDecision accepts exactly the lower-case wire names. On error it
// returns Reject, so a caller that drops the error fails closed.
func ParseDecision(s string) (Decision, error) {
	switch s {
	case "allow":
		return Allow, nil
	case "throttle":
		return Throttle, nil
	case "reject":
		return Reject, nil
	}
	return Reject, fmt.Errorf("%w: %q", ErrDecision, s)
}

// String returns the wire name; a value outside the known range is reported
// as "reject", matching how Stricter treats it.
func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case Throttle:
		return "throttle"
	}
	return "reject"
}
