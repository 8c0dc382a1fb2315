package score

// Difficulty rules. A challenge's proof-of-work difficulty (leading zero
// bits of PBKDF2 output, each bit doubling the expected work) starts at
// the site's challenge_difficulty, or DefaultDifficulty when the site
// leaves it to risk (0), and then:
//
//   - rises with the client IP's challenge rate on the site over the last
//     minute: +2 bits above 10/min, +4 above 30/min, +6 above 100/min;
//   - rises with a site-wide surge (the last minute's rate against the
//     site's hourly average, only above 60/min): +1 bit at 3×, +2 at 10×;
//   - rises by 1 bit per 5 abuse or false-negative reports, at most 3;
//   - falls by 1 bit per 5 confirmed false-positive reports, at most 4;
//
// and is clamped to [floor, MaxDifficulty], where floor is the site's
// challenge_difficulty when set, else MinDifficulty. So feedback can only
// take back what defaults and risk added, never go under an explicit
// site floor.
const (
	DefaultDifficulty = 8
	MinDifficulty     = 4
	MaxDifficulty     = 20
)

// Load is what the velocity actors and the feedback tally know.
type Load struct {
	// Floor is the site's challenge_difficulty; 0 lets risk decide.
	Floor int
	// IPPerMinute is this client's challenge rate on the site.
	IPPerMinute float64
	// SitePerMinute and SiteBaseline are the site's rate over the last
	// minute and its hourly average per minute.
	SitePerMinute, SiteBaseline float64
	// FalsePositives and Abuse count the site's detection feedback.
	FalsePositives, Abuse int
}

// Difficulty returns the challenge difficulty and the part of it that
// velocity added (the risk carried into the score).
func Difficulty(l Load) (bits, risk int) {
	base, floor := DefaultDifficulty, MinDifficulty
	if l.Floor > 0 {
		base, floor = l.Floor, l.Floor
	}
	switch {
	case l.IPPerMinute > 100:
		risk += 6
	case l.IPPerMinute > 30:
		risk += 4
	case l.IPPerMinute > 10:
		risk += 2
	}
	if l.SitePerMinute > 60 && l.SiteBaseline > 0 {
		switch surge := l.SitePerMinute / l.SiteBaseline; {
		case surge >= 10:
			risk += 2
		case surge >= 3:
			risk++
		}
	}
	bits = base + risk + min(3, max(l.Abuse, 0)/5) - min(4, max(l.FalsePositives, 0)/5)
	return min(max(bits, floor), max(MaxDifficulty, floor)), risk
}
