package score

import (
	"slices"
	"testing"
)

// human is a visit with every sign of a person.
func human() Signals {
	return Signals{Interaction: true, Visible: true, ElapsedMS: 2400, PointerMoves: 30, Keypresses: 4, ServerMS: 2600, BrowserHeaders: true}
}

func TestScore(t *testing.T) {
	tests := []struct {
		name    string
		mod     func(*Signals)
		fb      *Feedback
		want    float64
		reasons []string
	}{
		{"a person scores the base", func(*Signals) {}, nil, 0.9, nil},
		{"webdriver costs 0.6", func(s *Signals) { s.Webdriver = true }, nil, 0.3, []string{"automation-webdriver"}},
		{"webdriver and headless together floor at zero", func(s *Signals) {
			s.Webdriver, s.Headless, s.Interaction, s.PointerMoves, s.Keypresses = true, true, false, 0, 0
		}, nil, 0, []string{"automation-webdriver", "headless-browser", "no-input-activity", "no-interaction"}},
		{"no interaction weighs 0.2 on a visible widget", func(s *Signals) { s.Interaction = false }, nil, 0.7, []string{"no-interaction"}},
		{"no interaction weighs 0.05 in score-based modes", func(s *Signals) { s.Interaction, s.Invisible = false, true }, nil, 0.85, []string{"no-interaction"}},
		{"a hidden page costs 0.1", func(s *Signals) { s.Visible = false }, nil, 0.8, []string{"hidden-page"}},
		{"a solve under 400 ms is too fast, and short of a person's dwell", func(s *Signals) { s.ElapsedMS, s.ServerMS = 150, 180 }, nil, 0.65, []string{"too-fast", "short-dwell"}},
		{"a client claiming more time than passed is measured by the server", func(s *Signals) { s.ElapsedMS, s.ServerMS = 9000, 200 }, nil, 0.65, []string{"too-fast", "short-dwell"}},
		{"an invisible solve needs only 400 ms of dwell", func(s *Signals) { s.Invisible, s.ServerMS, s.ElapsedMS = true, 600, 600 }, nil, 0.9, nil},
		// Client-reported signals only lower a score: the server's own
		// evidence sets how high it may go.
		{"perfect client signals without browser headers are capped at 0.3", func(s *Signals) { s.BrowserHeaders = false }, nil, 0.3, []string{"unverified-client"}},
		{"a script claiming every human signal, fast and busy, scores the floor", func(s *Signals) {
			s.BrowserHeaders, s.ServerMS, s.ElapsedMS, s.Risk = false, 90, 2500, 6
		}, nil, 0.1, []string{"too-fast", "high-velocity", "unverified-client", "short-dwell"}},
		{"a missing client time falls back to the server's", func(s *Signals) { s.ElapsedMS = 0 }, nil, 0.9, nil},
		{"velocity risk of 4 bits costs 0.2", func(s *Signals) { s.Risk = 4 }, nil, 0.7, []string{"high-velocity"}},
		{"velocity risk of 1 bit is not a reason", func(s *Signals) { s.Risk = 1 }, nil, 0.9, nil},
		{"three false positives on a reason relieve 30% of it", func(s *Signals) { s.Visible = false },
			&Feedback{FalsePositives: [NumReasons]int{HiddenPage: 3}}, 0.83, []string{"hidden-page"}},
		{"relief stops at half the penalty", func(s *Signals) { s.Webdriver = true },
			&Feedback{FalsePositives: [NumReasons]int{Webdriver: 50}}, 0.6, []string{"automation-webdriver"}},
		{"relief of one reason leaves others alone", func(s *Signals) { s.Visible, s.Interaction = false, false },
			&Feedback{FalsePositives: [NumReasons]int{HiddenPage: 5}}, 0.65, []string{"no-interaction", "hidden-page"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := human()
			tc.mod(&s)
			got, set := Score(s, tc.fb)
			if got != tc.want {
				t.Errorf("score = %v, want %v", got, tc.want)
			}
			if codes := set.Codes(); !slices.Equal(codes, tc.reasons) {
				t.Errorf("reasons = %v, want %v", codes, tc.reasons)
			}
		})
	}
}

func TestReasonCodesRoundTrip(t *testing.T) {
	for _, code := range ReasonCodes() {
		r, ok := ParseReason(code)
		if !ok || r.String() != code {
			t.Fatalf("%s does not round-trip", code)
		}
	}
	if _, ok := ParseReason("made-up"); ok {
		t.Fatal("an unknown code parsed")
	}
}

func TestDifficulty(t *testing.T) {
	tests := []struct {
		name       string
		load       Load
		bits, risk int
	}{
		{"a quiet site without a floor gets the default", Load{}, 8, 0},
		{"a site floor replaces the default", Load{Floor: 12}, 12, 0},
		{"11 challenges a minute from one IP add 2 bits", Load{IPPerMinute: 11}, 10, 2},
		{"31 a minute add 4", Load{IPPerMinute: 31}, 12, 4},
		{"101 a minute add 6", Load{IPPerMinute: 101}, 14, 6},
		{"a 3x site surge adds 1", Load{SitePerMinute: 300, SiteBaseline: 100}, 9, 1},
		{"a 10x site surge adds 2", Load{SitePerMinute: 1000, SiteBaseline: 100}, 10, 2},
		{"a surge below 60 a minute is noise", Load{SitePerMinute: 50, SiteBaseline: 1}, 8, 0},
		{"ten abuse reports add 2 bits", Load{Abuse: 10}, 10, 0},
		{"abuse adds at most 3", Load{Abuse: 100}, 11, 0},
		{"ten false positives take 2 bits off the default", Load{FalsePositives: 10}, 6, 0},
		{"false positives never go below the minimum", Load{FalsePositives: 100}, 4, 0},
		{"false positives never go below an explicit floor", Load{Floor: 10, FalsePositives: 100}, 10, 0},
		{"false positives take back velocity bits", Load{Floor: 10, IPPerMinute: 50, FalsePositives: 10}, 12, 4},
		{"everything together is capped", Load{IPPerMinute: 500, SitePerMinute: 10000, SiteBaseline: 1, Abuse: 50, Floor: 16}, 20, 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bits, risk := Difficulty(tc.load)
			if bits != tc.bits || risk != tc.risk {
				t.Fatalf("Difficulty = %d bits (risk %d), want %d (risk %d)", bits, risk, tc.bits, tc.risk)
			}
		})
	}
}
