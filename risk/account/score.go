package account

import "math"

// Scoring: a pure function of what the service observed (Signals), the
// site's event rate (Site) and the event with the caller's hints (Event).
// Each finding adds a fixed weight and names one reason code; the sum is
// clamped to [0, 1]. Hints only ever add; feedback labels are the one
// input that may subtract, and only a little.

// Signals is what the service observed of a subject and a device, from
// its own counters and the catalog; never from the caller. The Trust API
// reads the same through Module.Signals.
type Signals struct {
	// SubjectFailures and DeviceFailures are failed authentications
	// (login, challenge, password reset) over the last Window, a sliding
	// estimate.
	SubjectFailures float64 `json:"subject_failures"`
	DeviceFailures  float64 `json:"device_failures"`
	// DevicesPerSubject and SubjectsPerDevice are the distinct
	// counterparts seen within Window (bounded by actors.MaxActivityMembers).
	DevicesPerSubject int `json:"devices_per_subject"`
	SubjectsPerDevice int `json:"subjects_per_device"`
	// HasDevice is false when no device was named.
	HasDevice bool `json:"has_device"`
	// DeviceKnown: the subject authenticated successfully from the device
	// within Retention. DeviceSeen: any event of the subject came from it.
	DeviceKnown bool `json:"device_known"`
	DeviceSeen  bool `json:"device_seen"`
	// TrustedDevice: the customer trusts the device for the subject.
	TrustedDevice bool `json:"trusted_device"`
	// SubjectLabel and DeviceLabel are the latest feedback label given to
	// an assessment of the subject or from the device: "", legitimate or
	// fraudulent.
	SubjectLabel string `json:"subject_label"`
	DeviceLabel  string `json:"device_label"`
}

// Site is the site's (or credential's workspace's) event rate per minute
// and its usual rate (0 until a minute has passed).
type Site struct {
	Rate, Baseline float64
}

// Event is the assessed event with the caller's hints.
type Event struct {
	Type, Outcome string
	// AccountAgeDays is the caller's hint, nil when not sent.
	AccountAgeDays      *int64
	CompromisedPassword bool
}

// Score is an assessment before the enforcement mode is applied.
type Score struct {
	Risk           float64
	Classification string
	Recommended    string
	Reasons        []string
}

// Weights and thresholds of the findings.
const (
	subjectFailuresAt     = 3
	subjectFailuresHighAt = 10
	deviceFailuresAt      = 5
	deviceFailuresHighAt  = 20
	subjectsPerDeviceAt   = 4
	subjectsPerDeviceHiAt = 10
	devicesPerSubjectAt   = 4
	siteSpikeFactor       = 5
	siteSpikeFloor        = 60 // events per minute before a spike can count

	riskMedium = 0.3
	riskHigh   = 0.7
)

// Assess scores one event. prior are the subject's failures before this
// event (for success_after_failures).
func Assess(ev Event, sig Signals, site Site, prior float64) Score {
	s := Score{Reasons: []string{}}
	add := func(w float64, reason string) {
		s.Risk += w
		s.Reasons = append(s.Reasons, reason)
	}
	switch {
	case sig.SubjectFailures >= subjectFailuresHighAt:
		add(0.45, ReasonSubjectFailuresHigh)
	case sig.SubjectFailures >= subjectFailuresAt:
		add(0.2, ReasonSubjectFailures)
	}
	switch {
	case sig.DeviceFailures >= deviceFailuresHighAt:
		add(0.5, ReasonDeviceFailuresHigh)
	case sig.DeviceFailures >= deviceFailuresAt:
		add(0.25, ReasonDeviceFailures)
	}
	if ev.Outcome == OutcomeSucceeded && authentication(ev.Type) && prior >= subjectFailuresAt {
		add(0.25, ReasonSuccessAfterFailures)
	}
	switch {
	case sig.SubjectsPerDevice >= subjectsPerDeviceHiAt:
		add(0.55, ReasonSubjectsPerDeviceHi)
	case sig.SubjectsPerDevice >= subjectsPerDeviceAt:
		add(0.35, ReasonSubjectsPerDevice)
	}
	if sig.DevicesPerSubject >= devicesPerSubjectAt {
		add(0.25, ReasonDevicesPerSubject)
	}
	switch {
	case !sig.HasDevice:
		add(0.1, ReasonDeviceMissing)
	case sig.TrustedDevice:
		// Trust replaces the new-device finding; it never hides the
		// failures or the fan-out above.
		s.Reasons = append(s.Reasons, ReasonTrustedDevice)
	case !sig.DeviceKnown && ev.Type != EventRegistration:
		add(0.2, ReasonNewDevice)
	}
	if ev.CompromisedPassword {
		add(0.4, ReasonCompromisedPassword)
	}
	if ev.AccountAgeDays != nil && *ev.AccountAgeDays < 1 && ev.Type != EventRegistration {
		add(0.15, ReasonNewAccount)
	}
	if sig.SubjectLabel == LabelFraudulent {
		add(0.4, ReasonPriorFraudSubject)
	}
	if sig.DeviceLabel == LabelFraudulent {
		add(0.4, ReasonPriorFraudDevice)
	}
	if sig.SubjectLabel == LabelLegitimate && sig.DeviceLabel != LabelFraudulent {
		add(-0.15, ReasonPriorLegitimate)
	}
	if site.Baseline > 0 && site.Rate >= siteSpikeFloor && site.Rate > siteSpikeFactor*site.Baseline {
		add(0.15, ReasonSiteVelocity)
	}
	s.Risk = math.Round(min(max(s.Risk, 0), 1)*1000) / 1000
	s.Classification, s.Recommended = classify(s.Risk)
	return s
}

func classify(risk float64) (class, recommended string) {
	switch {
	case risk >= riskHigh:
		return ClassHigh, DecisionDeny
	case risk >= riskMedium:
		return ClassMedium, DecisionChallenge
	}
	return ClassLow, DecisionAllow
}

// Applied is the decision the enforcement mode applies: the recommendation
// under enforce, allow under observe (the recommendation is still
// answered), as API Protection does.
func Applied(mode, recommended string) string {
	if mode == ModeObserve {
		return DecisionAllow
	}
	return recommended
}

// ModeOf maps the workspace's default mode to Account Defence's: observe
// stays observe, every other mode (enforce, throttle) enforces.
func ModeOf(workspaceMode string) string {
	if workspaceMode == ModeObserve {
		return ModeObserve
	}
	return ModeEnforce
}
