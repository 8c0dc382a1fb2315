package account

import "slices"

// The closed vocabularies of Account Defence. The route file's struct tags
// document the same lists in the contract; vocab_test.go keeps them equal.

// Event types: what happened to the account (Castle's event grid).
const (
	EventLogin         = "login"
	EventRegistration  = "registration"
	EventPasswordReset = "password_reset"
	EventProfileUpdate = "profile_update"
	EventTransaction   = "transaction"
	EventChallenge     = "challenge" // a second factor or step-up
	EventCustom        = "custom"
)

// EventTypes lists every event type.
var EventTypes = []string{EventLogin, EventRegistration, EventPasswordReset, EventProfileUpdate, EventTransaction, EventChallenge, EventCustom}

// Outcomes of an event: every event type takes each of them.
const (
	OutcomeAttempted = "attempted" // assessed before the outcome is known
	OutcomeSucceeded = "succeeded"
	OutcomeFailed    = "failed"
)

// Outcomes lists every outcome.
var Outcomes = []string{OutcomeAttempted, OutcomeSucceeded, OutcomeFailed}

// authentication reports whether a failure of event counts as a failed
// authentication (login, second factor, password reset).
func authentication(event string) bool {
	return event == EventLogin || event == EventChallenge || event == EventPasswordReset
}

// proving reports whether a success of event proves the device belongs to
// the subject, so the device is known from then on.
func proving(event string) bool {
	return event == EventLogin || event == EventRegistration || event == EventChallenge
}

// Reason codes of an assessment: a closed set, each with a fixed meaning.
const (
	ReasonSubjectFailures      = "subject_failed_logins"         // ≥ 3 failed authentications of the subject in the last hour
	ReasonSubjectFailuresHigh  = "subject_failed_logins_high"    // ≥ 10
	ReasonDeviceFailures       = "device_failed_logins"          // ≥ 5 failed authentications from the device in the last hour
	ReasonDeviceFailuresHigh   = "device_failed_logins_high"     // ≥ 20
	ReasonSuccessAfterFailures = "success_after_failures"        // a success after ≥ 3 failures of the subject
	ReasonSubjectsPerDevice    = "many_subjects_per_device"      // ≥ 4 subjects used the device in the last hour
	ReasonSubjectsPerDeviceHi  = "many_subjects_per_device_high" // ≥ 10: credential stuffing or a shared device farm
	ReasonDevicesPerSubject    = "many_devices_per_subject"      // ≥ 4 devices used the subject in the last hour
	ReasonNewDevice            = "new_device"                    // no successful authentication of the subject from this device
	ReasonTrustedDevice        = "trusted_device"                // the customer trusts this device for the subject
	ReasonDeviceMissing        = "device_missing"                // no device_id: device signals could not be used
	ReasonCompromisedPassword  = "compromised_password"          // the caller reported a breached password (hint)
	ReasonNewAccount           = "new_account"                   // the caller reported an account under a day old (hint)
	ReasonPriorFraudSubject    = "prior_fraud_subject"           // feedback labelled an earlier assessment of the subject fraudulent
	ReasonPriorFraudDevice     = "prior_fraud_device"            // feedback labelled an earlier assessment from the device fraudulent
	ReasonPriorLegitimate      = "prior_legitimate"              // feedback labelled an earlier assessment of the subject legitimate
	ReasonSiteVelocity         = "site_velocity_spike"           // the site's event rate is far over its usual rate
)

// Reasons lists every reason code.
var Reasons = []string{ReasonSubjectFailures, ReasonSubjectFailuresHigh, ReasonDeviceFailures, ReasonDeviceFailuresHigh,
	ReasonSuccessAfterFailures, ReasonSubjectsPerDevice, ReasonSubjectsPerDeviceHi, ReasonDevicesPerSubject, ReasonNewDevice,
	ReasonTrustedDevice, ReasonDeviceMissing, ReasonCompromisedPassword, ReasonNewAccount, ReasonPriorFraudSubject,
	ReasonPriorFraudDevice, ReasonPriorLegitimate, ReasonSiteVelocity}

// Classifications and decisions.
const (
	ClassLow    = "low"
	ClassMedium = "medium"
	ClassHigh   = "high"

	DecisionAllow     = "allow"
	DecisionChallenge = "challenge"
	DecisionDeny      = "deny"

	ModeObserve = "observe"
	ModeEnforce = "enforce"
)

// Feedback labels, the first level of the taxonomy.
const (
	LabelLegitimate = "legitimate"
	LabelFraudulent = "fraudulent"
)

// Labels lists the feedback labels.
var Labels = []string{LabelLegitimate, LabelFraudulent}

// FeedbackReasons is the second level: the reason codes each label takes.
var FeedbackReasons = map[string][]string{
	LabelLegitimate: {"passed_two_factor", "correct_password", "customer_confirmed", "support_verified", "other"},
	LabelFraudulent: {"failed_two_factor", "incorrect_password", "account_takeover", "credential_stuffing", "fake_account",
		"chargeback", "chargeback_fraud", "payment_heuristics", "customer_reported", "other"},
}

// AllFeedbackReasons lists every feedback reason code once.
func AllFeedbackReasons() []string {
	var out []string
	for _, l := range Labels {
		for _, r := range FeedbackReasons[l] {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// Trusted-device actions and statuses (spec 3.6).
const (
	ActionTrust  = "trust"
	ActionRevoke = "revoke"

	StatusTrusted = "trusted"
	StatusRevoked = "revoked"
)
