package account

import (
	"slices"
	"testing"
)

func TestAssessScoresWhatTheServiceObserved(t *testing.T) {
	known := Signals{HasDevice: true, DeviceKnown: true, DeviceSeen: true, DevicesPerSubject: 1, SubjectsPerDevice: 1}
	with := func(f func(*Signals)) Signals {
		s := known
		f(&s)
		return s
	}
	login := func(outcome string) Event { return Event{Type: EventLogin, Outcome: outcome} }
	age := func(d int64) *int64 { return &d }
	tests := []struct {
		name    string
		ev      Event
		sig     Signals
		site    Site
		prior   float64
		risk    float64
		class   string
		reasons []string
	}{
		{"a login from a known device with nothing observed is low risk with no reasons",
			login(OutcomeSucceeded), known, Site{}, 0, 0, ClassLow, nil},
		{"a login from a device the subject never succeeded from is a new device",
			login(OutcomeAttempted), with(func(s *Signals) { s.DeviceKnown = false }), Site{}, 0, 0.2, ClassLow, []string{ReasonNewDevice}},
		{"a trusted device carries no new-device risk",
			login(OutcomeAttempted), with(func(s *Signals) { s.DeviceKnown, s.TrustedDevice = false, true }), Site{}, 0, 0, ClassLow, []string{ReasonTrustedDevice}},
		{"a trusted device does not hide credential stuffing",
			login(OutcomeFailed), with(func(s *Signals) { s.TrustedDevice, s.SubjectsPerDevice, s.DeviceFailures = true, 12, 25 }), Site{}, 0, 1, ClassHigh,
			[]string{ReasonDeviceFailuresHigh, ReasonSubjectsPerDeviceHi, ReasonTrustedDevice}},
		{"a registration is never a new device",
			Event{Type: EventRegistration, Outcome: OutcomeAttempted}, with(func(s *Signals) { s.DeviceKnown = false }), Site{}, 0, 0, ClassLow, nil},
		{"no device id is scored a little",
			login(OutcomeAttempted), Signals{}, Site{}, 0, 0.1, ClassLow, []string{ReasonDeviceMissing}},
		{"three failures of the subject are medium-low",
			login(OutcomeFailed), with(func(s *Signals) { s.SubjectFailures = 3 }), Site{}, 2, 0.2, ClassLow, []string{ReasonSubjectFailures}},
		{"ten failures of the subject are medium",
			login(OutcomeFailed), with(func(s *Signals) { s.SubjectFailures = 10 }), Site{}, 9, 0.45, ClassMedium, []string{ReasonSubjectFailuresHigh}},
		{"a success after failures is an account-takeover signal",
			login(OutcomeSucceeded), with(func(s *Signals) { s.SubjectFailures, s.DeviceKnown = 4, false }), Site{}, 4, 0.65, ClassMedium,
			[]string{ReasonSubjectFailures, ReasonSuccessAfterFailures, ReasonNewDevice}},
		{"many subjects from one device is credential stuffing",
			login(OutcomeFailed), with(func(s *Signals) { s.SubjectsPerDevice, s.DeviceFailures = 5, 6 }), Site{}, 0, 0.6, ClassMedium,
			[]string{ReasonDeviceFailures, ReasonSubjectsPerDevice}},
		{"many devices for one subject is scored",
			login(OutcomeAttempted), with(func(s *Signals) { s.DevicesPerSubject = 4 }), Site{}, 0, 0.25, ClassLow, []string{ReasonDevicesPerSubject}},
		{"the caller's compromised-password hint raises risk",
			Event{Type: EventLogin, Outcome: OutcomeSucceeded, CompromisedPassword: true}, known, Site{}, 0, 0.4, ClassMedium, []string{ReasonCompromisedPassword}},
		{"an account under a day old raises risk of a transaction",
			Event{Type: EventTransaction, Outcome: OutcomeAttempted, AccountAgeDays: age(0)}, known, Site{}, 0, 0.15, ClassLow, []string{ReasonNewAccount}},
		{"an old account never lowers risk",
			Event{Type: EventLogin, Outcome: OutcomeAttempted, AccountAgeDays: age(3650)}, with(func(s *Signals) { s.DeviceKnown = false }), Site{}, 0, 0.2, ClassLow, []string{ReasonNewDevice}},
		{"prior fraud on the subject and the device is high risk",
			login(OutcomeAttempted), with(func(s *Signals) { s.SubjectLabel, s.DeviceLabel = LabelFraudulent, LabelFraudulent }), Site{}, 0, 0.8, ClassHigh,
			[]string{ReasonPriorFraudSubject, ReasonPriorFraudDevice}},
		{"prior legitimate feedback lowers risk a little",
			login(OutcomeAttempted), with(func(s *Signals) { s.DeviceKnown, s.SubjectLabel = false, LabelLegitimate }), Site{}, 0, 0.05, ClassLow,
			[]string{ReasonNewDevice, ReasonPriorLegitimate}},
		{"prior legitimate feedback never goes below zero",
			login(OutcomeSucceeded), with(func(s *Signals) { s.SubjectLabel = LabelLegitimate }), Site{}, 0, 0, ClassLow, []string{ReasonPriorLegitimate}},
		{"a site rate far over its baseline is a spike",
			login(OutcomeAttempted), known, Site{Rate: 600, Baseline: 50}, 0, 0.15, ClassLow, []string{ReasonSiteVelocity}},
		{"a site without a baseline yet is no spike",
			login(OutcomeAttempted), known, Site{Rate: 600}, 0, 0, ClassLow, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Assess(tc.ev, tc.sig, tc.site, tc.prior)
			if got.Risk != tc.risk || got.Classification != tc.class || !slices.Equal(got.Reasons, append([]string{}, tc.reasons...)) {
				t.Fatalf("got %v %s %v, want %v %s %v", got.Risk, got.Classification, got.Reasons, tc.risk, tc.class, tc.reasons)
			}
			for _, r := range got.Reasons {
				if !slices.Contains(Reasons, r) {
					t.Fatalf("reason %q is outside the closed set", r)
				}
			}
		})
	}
}

func TestHintsNeverLowerRisk(t *testing.T) {
	sigs := []Signals{{}, {HasDevice: true}, {HasDevice: true, DeviceKnown: true}, {HasDevice: true, SubjectFailures: 12, SubjectsPerDevice: 11}}
	for _, ev := range EventTypes {
		for _, out := range Outcomes {
			for _, sig := range sigs {
				base := Assess(Event{Type: ev, Outcome: out}, sig, Site{}, 0).Risk
				for _, days := range []int64{0, 1, 30, 36500} {
					for _, comp := range []bool{false, true} {
						d := days
						r := Assess(Event{Type: ev, Outcome: out, AccountAgeDays: &d, CompromisedPassword: comp}, sig, Site{}, 0).Risk
						if r < base {
							t.Fatalf("%s/%s with age %d compromised %v scored %v under %v without hints", ev, out, days, comp, r, base)
						}
					}
				}
			}
		}
	}
}

func TestEnforcementMode(t *testing.T) {
	tests := []struct {
		name, wsMode, mode string
		recommended, want  string
	}{
		{"observe applies allow and keeps the recommendation", "observe", ModeObserve, DecisionDeny, DecisionAllow},
		{"enforce applies the recommendation", "enforce", ModeEnforce, DecisionDeny, DecisionDeny},
		{"throttle enforces", "throttle", ModeEnforce, DecisionChallenge, DecisionChallenge},
		{"an unset mode enforces", "", ModeEnforce, DecisionChallenge, DecisionChallenge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := ModeOf(tc.wsMode)
			if m != tc.mode || Applied(m, tc.recommended) != tc.want {
				t.Fatalf("mode %s applies %s", m, Applied(m, tc.recommended))
			}
		})
	}
}

func TestClassification(t *testing.T) {
	for _, tc := range []struct {
		risk        float64
		class, deci string
	}{{0, ClassLow, DecisionAllow}, {0.299, ClassLow, DecisionAllow}, {0.3, ClassMedium, DecisionChallenge},
		{0.699, ClassMedium, DecisionChallenge}, {0.7, ClassHigh, DecisionDeny}, {1, ClassHigh, DecisionDeny}} {
		if c, d := classify(tc.risk); c != tc.class || d != tc.deci {
			t.Errorf("%v: %s %s", tc.risk, c, d)
		}
	}
}
