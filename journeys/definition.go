package journeys

import (
	"time"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/lib/ident"
	"github.com/trustd/trustd/risk/trust"
)

// The journey methods (spec 2.7).
const (
	MethodHuman         = "human_verification"
	MethodLiveness      = "facial_liveness"
	MethodEnrollment    = "facial_enrollment"
	MethodAuthorization = "facial_authorization"
	MethodDevice        = "device_authorization"
)

// Methods lists the methods, for the contract.
var Methods = []string{MethodHuman, MethodLiveness, MethodEnrollment, MethodAuthorization, MethodDevice}

// SessionLifetime is a session's lifetime (spec 8: 300 s observed), the
// default and the most a definition may ask for.
const SessionLifetime = 300 * time.Second

// Achieves is what a successful attempt of a method establishes: the rung
// of the assurance ladder and the bindings. It says no more than the
// method checks: human verification proves presence only; a liveness
// check proves a live person, not who; enrollment records a face for the
// server-derived subject without checking who it is; facial
// authorization matches the enrolled face of that subject with a liveness
// check; a passkey assertion with user verification proves possession of
// the subject's registered device key.
type Achieves struct {
	Assurance   trust.Level
	Identity    bool
	Liveness    bool
	DeviceBound bool
	// Authorization: the method can authorize an operation for the subject
	// (it binds the subject's own credential to the operation).
	Authorization bool
}

// MethodAchieves returns what method establishes.
func MethodAchieves(method string) Achieves {
	switch method {
	case MethodLiveness:
		return Achieves{Assurance: trust.LevelNone, Liveness: true}
	case MethodEnrollment:
		return Achieves{Assurance: trust.LevelNone, Liveness: true}
	case MethodAuthorization:
		return Achieves{Assurance: trust.LevelHigh, Identity: true, Liveness: true, Authorization: true}
	case MethodDevice:
		return Achieves{Assurance: trust.LevelStandard, Identity: true, DeviceBound: true, Authorization: true}
	}
	return Achieves{Assurance: trust.LevelNone}
}

func validMethod(m string) bool {
	for _, x := range Methods {
		if m == x {
			return true
		}
	}
	return false
}

// needsSubject: the method reads or writes something of the subject.
func needsSubject(method string) bool {
	return method == MethodEnrollment || method == MethodAuthorization || method == MethodDevice
}

// Spec is a journey definition as the admin API takes it.
type Spec struct {
	Key                    string
	Name                   string
	Method                 string
	RequestedAssurance     string
	Consent                catalog.JourneyConsent
	Requirements           catalog.JourneyRequirements
	SessionLifetimeSeconds int
	Escalation             catalog.JourneyEscalation
}

// validKey is the rule of a journey key: 1 to 64 of a-z 0-9 _ - .
func validKey(s string) bool { return validCode(s, 64) }

// validCode reports 1 to n of a-z 0-9 _ - . (keys, reason codes, labels).
func validCode(s string, n int) bool {
	if len(s) == 0 || len(s) > n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// Validate checks a definition: every field in range, and the method (and
// each escalation method) able to meet what the journey promises, so a
// definition never promises a binding its method does not check.
func (s Spec) Validate() error {
	switch {
	case !validKey(s.Key):
		return ErrInvalidJourney.With("key: 1 to 64 of a-z 0-9 _ - .")
	case len(s.Name) == 0 || len(s.Name) > 128 || !ident.Printable(s.Name):
		return ErrInvalidJourney.With("name: 1 to 128 printable characters")
	case !validMethod(s.Method):
		return ErrInvalidJourney.With("method: one of human_verification, facial_liveness, facial_enrollment, facial_authorization, device_authorization")
	case len(s.Consent.Version) > 64 || !ident.Printable(s.Consent.Version):
		return ErrInvalidJourney.With("consent.version: at most 64 printable characters")
	case s.Consent.Required && s.Consent.Version == "":
		return ErrInvalidJourney.With("consent.version: required when consent.required")
	case s.SessionLifetimeSeconds < 0 || s.SessionLifetimeSeconds > int(SessionLifetime/time.Second):
		return ErrInvalidJourney.With("session_lifetime_seconds: 30 to 300 (0: 300)")
	case s.SessionLifetimeSeconds != 0 && s.SessionLifetimeSeconds < 30:
		return ErrInvalidJourney.With("session_lifetime_seconds: 30 to 300 (0: 300)")
	}
	want, ok := trust.ParseLevel(s.RequestedAssurance)
	if !ok {
		return ErrInvalidJourney.With("requested_assurance: none, document_only, standard or high")
	}
	check := func(field, method string) error {
		a := MethodAchieves(method)
		switch {
		case !a.Assurance.Satisfies(want):
			return ErrInvalidJourney.With("%s: %s achieves %s, below requested_assurance %s", field, method, a.Assurance, want)
		case s.Requirements.Identity && !a.Identity:
			return ErrInvalidJourney.With("%s: %s does not bind identity (requirements.identity)", field, method)
		case s.Requirements.Liveness && !a.Liveness:
			return ErrInvalidJourney.With("%s: %s does not check liveness (requirements.liveness)", field, method)
		case s.Requirements.Authorization && !a.Authorization:
			return ErrInvalidJourney.With("%s: %s cannot authorize an operation (requirements.authorization)", field, method)
		}
		return nil
	}
	if err := check("method", s.Method); err != nil {
		return err
	}
	e := s.Escalation
	for _, x := range []struct{ field, m string }{{"escalation.high_risk_method", e.HighRiskMethod}, {"escalation.medium_risk_method", e.MediumRiskMethod}} {
		if x.m == "" {
			continue
		}
		if !validMethod(x.m) {
			return ErrInvalidJourney.With("%s: one of the journey methods", x.field)
		}
		if err := check(x.field, x.m); err != nil {
			return err
		}
		// An escalation never lowers what the journey achieves.
		if !MethodAchieves(x.m).Assurance.Satisfies(MethodAchieves(s.Method).Assurance) {
			return ErrInvalidJourney.With("%s: %s achieves less than the journey's method %s", x.field, x.m, s.Method)
		}
	}
	return nil
}

// NewJourney validates spec and returns the record for workspace; the
// catalog sets the policy version (1, then +1 on every change).
func NewJourney(workspaceID string, s Spec, now time.Time) (catalog.Journey, error) {
	if err := s.Validate(); err != nil {
		return catalog.Journey{}, err
	}
	if s.SessionLifetimeSeconds == 0 {
		s.SessionLifetimeSeconds = int(SessionLifetime / time.Second)
	}
	if s.RequestedAssurance == "" {
		s.RequestedAssurance = trust.LevelNone.String()
	}
	return catalog.Journey{WorkspaceID: workspaceID, Key: s.Key, Name: s.Name, Method: s.Method, RequestedAssurance: s.RequestedAssurance,
		Consent: s.Consent, Requirements: s.Requirements, SessionLifetimeSeconds: s.SessionLifetimeSeconds, Escalation: s.Escalation,
		UpdatedAt: now}, nil
}
