// Package score turns the bounded signals of one widget redeem into a
// score in [0, 1] with the reasons that lowered it, and chooses the proof-
// of-work difficulty of a new challenge from velocity and feedback. Both
// are pure functions of their inputs, so every rule is table-tested and
// every score can be explained by its reason codes. It never trusts a
// client-sent score and never performs I/O.
package score

import "math"

// Reason is one explainable cause that lowered a score.
type Reason uint8

// The reasons, a closed set: tokens carry them as a bit set.
const (
	Webdriver        Reason = iota // the browser reports navigator.webdriver
	Headless                       // headless-browser traits
	NoActivity                     // no pointer movement and no key press
	NoInteraction                  // the visitor never interacted with the widget
	HiddenPage                     // the page was not visible while solving
	TooFast                        // solved faster than a person can
	Velocity                       // many challenges from this client or a site-wide surge
	UnverifiedClient               // the redeem request lacks the headers a browser's fetch always sends
	ShortDwell                     // the server saw less time between challenge and redeem than a person needs
	NumReasons
)

var reasonNames = [NumReasons]string{
	"automation-webdriver", "headless-browser", "no-input-activity", "no-interaction",
	"hidden-page", "too-fast", "high-velocity", "unverified-client", "short-dwell",
}

// String is the reason's stable code.
func (r Reason) String() string {
	if r < NumReasons {
		return reasonNames[r]
	}
	return ""
}

// ParseReason returns the reason called code.
func ParseReason(code string) (Reason, bool) {
	for i, n := range reasonNames {
		if n == code {
			return Reason(i), true
		}
	}
	return 0, false
}

// ReasonCodes lists every reason code, for the contract.
func ReasonCodes() []string { return append([]string(nil), reasonNames[:]...) }

// Set is a bit set of reasons.
type Set uint32

// Has reports whether r is in the set.
func (s Set) Has(r Reason) bool { return s&(1<<r) != 0 }

// Codes lists the set's reason codes in order.
func (s Set) Codes() []string {
	var out []string
	for r := Reason(0); r < NumReasons; r++ {
		if s.Has(r) {
			out = append(out, r.String())
		}
	}
	return out
}

// Signals are what the widget reports, bounded by the server before use,
// plus what the server measured itself.
type Signals struct {
	Webdriver    bool
	Headless     bool
	Interaction  bool
	Visible      bool
	ElapsedMS    int
	PointerMoves int
	Keypresses   int
	// Invisible is true for score-based modes, where no interaction with
	// the widget is expected, so its absence weighs less.
	Invisible bool
	// ServerMS is the server-measured time from challenge issue to redeem.
	ServerMS int64
	// Risk is the difficulty (bits) velocity added when the challenge was
	// issued.
	Risk int
	// BrowserHeaders is the server's own reading of the redeem request:
	// it carried the fetch metadata and client hints a real browser sends
	// and no automation marker (see http's browserHeaders).
	BrowserHeaders bool
}

// Feedback is what a site's confirmed detection feedback says about each
// reason: how many reports said a verification with that reason was in
// fact a person.
type Feedback struct {
	FalsePositives [NumReasons]int
}

// Base is the score of a visit with no reason against it.
const Base = 0.9

// A score is the lower of two: what the server itself observed (the
// evidence ceiling) and Base less the penalties of every reason, some of
// which the client reports. Client-reported signals can therefore only
// lower a score; the server's evidence alone decides how high it may go:
//
//	Floor                                 0.1  nothing observed for the client
//	+ browser headers consistent          0.4
//	+ dwell of a person (server clock)    0.25
//	+ no velocity                         0.15  = 0.9 = Base
//
// and never above UnverifiedCap without the browser headers: a request no
// browser made is at best "likely automated", whatever else it claims.
const (
	UnverifiedCap   = 0.3
	Floor           = 0.1
	headersEvidence = 0.4
	dwellEvidence   = 0.25
	calmEvidence    = 0.15
	// HumanDwellMS is the least time between issuing a challenge and its
	// redeem, on the server's clock, that a person takes where they must
	// act (checkbox, visual); invisible modes need MinHumanMS.
	HumanDwellMS = 1200
)

// Ceiling is the highest score the server's own observations allow.
func Ceiling(s Signals) (c float64) {
	c = Floor
	if s.BrowserHeaders {
		c += headersEvidence
	}
	defer func() {
		if !s.BrowserHeaders {
			c = math.Min(c, UnverifiedCap)
		}
	}()
	if s.ServerMS >= dwellNeeded(s) {
		c += dwellEvidence
	}
	if s.Risk < VelocityRiskBits {
		c += calmEvidence
	}
	return math.Round(c*1000) / 1000
}

func dwellNeeded(s Signals) int64 {
	if s.Invisible {
		return MinHumanMS
	}
	return HumanDwellMS
}

// penalty is each reason's weight before feedback relief.
func penalty(r Reason, s *Signals) float64 {
	switch r {
	case Webdriver:
		return 0.6
	case Headless:
		return 0.4
	case NoActivity:
		return 0.1
	case NoInteraction:
		if s.Invisible {
			return 0.05
		}
		return 0.2
	case HiddenPage:
		return 0.1
	case TooFast:
		return 0.2
	case Velocity:
		return math.Min(0.3, 0.05*float64(s.Risk))
	case UnverifiedClient, ShortDwell:
		return 0 // they lower the ceiling instead (see Ceiling)
	}
	return 0
}

// Thresholds of the rules.
const (
	// MinHumanMS is the fastest a person completes a widget; below it the
	// solve is TooFast. The server's own measure counts when the client's
	// is missing or claims more time than really passed.
	MinHumanMS = 400
	// VelocityRiskBits is the velocity difficulty from which a score
	// carries the Velocity reason.
	VelocityRiskBits = 2
)

// Relief is how much of a reason's penalty a site's confirmed false
// positives remove: 10% per report, at most half.
func Relief(falsePositives int) float64 {
	return math.Min(0.5, 0.1*float64(max(falsePositives, 0)))
}

// Score computes the score, rounded to thousandths, and the reasons.
func Score(s Signals, fb *Feedback) (float64, Set) {
	var set Set
	add := func(r Reason, cond bool) {
		if cond {
			set |= 1 << r
		}
	}
	add(Webdriver, s.Webdriver)
	add(Headless, s.Headless)
	add(NoActivity, s.PointerMoves <= 0 && s.Keypresses <= 0)
	add(NoInteraction, !s.Interaction)
	add(HiddenPage, !s.Visible)
	elapsed := int64(s.ElapsedMS)
	if elapsed <= 0 || (s.ServerMS > 0 && elapsed > s.ServerMS+1000) {
		elapsed = s.ServerMS
	}
	add(TooFast, elapsed < MinHumanMS)
	add(Velocity, s.Risk >= VelocityRiskBits)
	add(UnverifiedClient, !s.BrowserHeaders)
	add(ShortDwell, s.ServerMS < dwellNeeded(s))

	score := Base
	for r := Reason(0); r < NumReasons; r++ {
		if !set.Has(r) {
			continue
		}
		p := penalty(r, &s)
		if fb != nil {
			p *= 1 - Relief(fb.FalsePositives[r])
		}
		score -= p
	}
	return Round(math.Min(score, Ceiling(s))), set
}

// Round clamps v to [0, 1] and rounds it to thousandths.
func Round(v float64) float64 {
	if v < 0 || math.IsNaN(v) {
		return 0
	}
	if v > 1 {
		return 1
	}
	return math.Round(v*1000) / 1000
}
