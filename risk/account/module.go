package account

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/lib/ident"
)

// Store is the replicated catalog: read a version, or change it through Raft.
type Store interface {
	Catalog() *catalog.Catalog
	Apply(ctx context.Context, cmd catalog.Command) (any, error)
}

// Module is Account Defence. It holds no state of its own: counters live
// in actors, trusted devices in the catalog.
type Module struct {
	ask   actors.Asker
	store Store
	now   func() time.Time
}

// New builds the module over the cluster's router and the catalog store.
func New(ask actors.Asker, store Store, now func() time.Time) *Module {
	if now == nil {
		now = time.Now
	}
	return &Module{ask: ask, store: store, now: now}
}

// Caller is who asks: the workspace, and the site whose secret was used
// ("" for a workspace credential).
type Caller struct {
	Workspace *catalog.Workspace
	AppID     string
}

// AssessRequest is a decoded POST /account/assess.
type AssessRequest struct {
	SubjectID, DeviceID string
	EventType, Outcome  string
	AccountAgeDays      *int64
	CompromisedPassword bool
}

// Assessment is the answer of POST /account/assess (spec 2.3).
type Assessment struct {
	Success             bool     `json:"success" required:"true"`
	AssessmentID        string   `json:"assessment_id" required:"true" format:"uuid" doc:"For POST /account/feedback, for 24 hours."`
	RiskScore           float64  `json:"risk_score" required:"true" doc:"0 to 1; higher is riskier."`
	Classification      string   `json:"classification" required:"true" enum:"low|medium|high" doc:"low below 0.3, medium below 0.7, high from 0.7."`
	RecommendedDecision string   `json:"recommended_decision" required:"true" enum:"allow|challenge|deny" doc:"allow for low risk, challenge (step up) for medium, deny for high."`
	Decision            string   `json:"decision" required:"true" enum:"allow|challenge|deny" doc:"recommended_decision when enforcement_mode is enforce; allow under observe."`
	TrustedDevice       bool     `json:"trusted_device" required:"true" doc:"The device is trusted for the subject (POST /account/trusted-device)."`
	Reasons             []string `json:"reasons" required:"true" enum:"subject_failed_logins|subject_failed_logins_high|device_failed_logins|device_failed_logins_high|success_after_failures|many_subjects_per_device|many_subjects_per_device_high|many_devices_per_subject|new_device|trusted_device|device_missing|compromised_password|new_account|prior_fraud_subject|prior_fraud_device|prior_legitimate|site_velocity_spike" doc:"Closed set. subject_failed_logins: 3+ failed authentications (login, challenge, password_reset) of the subject in the last hour; _high: 10+. device_failed_logins: 5+ from the device; _high: 20+. success_after_failures: a success after 3+ failures. many_subjects_per_device: 4+ subjects from the device in the last hour; _high: 10+ (credential stuffing). many_devices_per_subject: 4+ devices for the subject in the last hour. new_device: no successful login, registration or challenge of the subject from this device in 30 days. trusted_device: the customer trusts the device (no new_device risk). device_missing: no device_id sent. compromised_password, new_account: the caller's hints (raise risk only). prior_fraud_subject, prior_fraud_device, prior_legitimate: feedback on earlier assessments (30 days). site_velocity_spike: the site's event rate is over 5 times its usual rate."`
	EnforcementMode     string   `json:"enforcement_mode" required:"true" enum:"observe|enforce" doc:"The workspace's default_mode: observe stays observe, enforce and throttle enforce."`
}

func (r *AssessRequest) validate() error {
	if !ident.Valid(r.SubjectID) {
		return ErrInvalidSubject
	}
	if r.DeviceID != "" && !ident.Valid(r.DeviceID) {
		return ErrInvalidDevice
	}
	if !oneOf(r.EventType, EventTypes) || !oneOf(r.Outcome, Outcomes) {
		return ErrInvalidEvent
	}
	if a := r.AccountAgeDays; a != nil && (*a < 0 || *a > 36500) {
		return ErrInvalidHint
	}
	return nil
}

func oneOf(v string, set []string) bool {
	for _, s := range set {
		if s == v {
			return true
		}
	}
	return false
}

// unavailable wraps a failed ask as the module's 503.
func unavailable(what string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, what, err)
}

// keyed is one ask of a batch.
type keyed struct {
	key string
	op  actors.Op
}

// askAll runs the asks in parallel and returns the first error.
func (m *Module) askAll(asks ...keyed) error {
	errs := make(chan error, len(asks))
	for _, a := range asks {
		go func() { errs <- m.ask.Ask(a.key, a.op) }()
	}
	var first error
	for range asks {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Assess records the event in the subject's and the device's activity,
// reads what else is known of them, scores it and keeps the assessment
// for feedback.
func (m *Module) Assess(ctx context.Context, caller Caller, req AssessRequest) (Assessment, error) {
	if err := req.validate(); err != nil {
		return Assessment{}, err
	}
	ws := caller.Workspace
	now := m.now()
	sh := SubjectHash(ws.ScopeKey, req.SubjectID)
	dh := ""
	if req.DeviceID != "" {
		dh = DeviceHash(ws.ScopeKey, req.DeviceID)
	}
	failed := req.Outcome == OutcomeFailed && authentication(req.EventType)
	succeeded := req.Outcome == OutcomeSucceeded && proving(req.EventType)
	act := func(key, member string) *actors.Activity {
		return &actors.Activity{Key: key, Member: member, Record: true, Failed: failed, Succeeded: succeeded,
			WindowNs: int64(Window), RetainNs: int64(Retention), MaxMembers: MaxCounterparts}
	}
	subj := act(subjectActivityKey(ws.ID, sh), dh)
	subjLabel := &actors.SubjectLabel{Key: subjectLabelKey(ws.ID, sh)}
	site := caller.AppID
	if site == "" {
		site = "-"
	}
	rate := &actors.Hit{Key: siteKey(ws.ID, site), Window: int64(siteWindow)}
	asks := []keyed{{subj.Key, subj}, {subjLabel.Key, subjLabel}, {rate.Key, rate}}
	var dev *actors.Activity
	var devLabel *actors.SubjectLabel
	if dh != "" {
		dev = act(deviceActivityKey(ws.ID, dh), sh)
		devLabel = &actors.SubjectLabel{Key: deviceLabelKey(ws.ID, dh)}
		asks = append(asks, keyed{dev.Key, dev}, keyed{devLabel.Key, devLabel})
	}
	if err := m.askAll(asks...); err != nil {
		return Assessment{}, unavailable("account activity", err)
	}
	sig := Signals{SubjectFailures: subj.Failures, DevicesPerSubject: subj.Distinct, HasDevice: dh != "",
		DeviceKnown: subj.Known, DeviceSeen: subj.Seen, SubjectLabel: subjLabel.Label}
	if dev != nil {
		sig.DeviceFailures, sig.SubjectsPerDevice, sig.DeviceLabel = dev.Failures, dev.Distinct, devLabel.Label
		sig.TrustedDevice = m.store.Catalog().TrustedDevice(ws.ID, sh, dh, now) != nil
	}
	prior := subj.Failures
	if failed {
		prior--
	}
	sc := Assess(Event{Type: req.EventType, Outcome: req.Outcome, AccountAgeDays: req.AccountAgeDays,
		CompromisedPassword: req.CompromisedPassword}, sig, Site{Rate: rate.Rate, Baseline: rate.Baseline}, prior)
	mode := ModeOf(ws.Settings.DefaultMode)
	id := uuid.NewString()
	rec := actors.Assessment{ID: assessmentKey(id), WorkspaceID: ws.ID, AppID: caller.AppID, Risk: sc.Risk,
		CreatedNs: now.UnixNano(), ExpiresNs: now.Add(AssessmentTTL).UnixNano(), SubjectKey: subjLabel.Key}
	if devLabel != nil {
		rec.DeviceKey = devLabel.Key
	}
	if err := m.ask.Ask(rec.ID, &actors.PutAssessment{Assessment: rec}); err != nil {
		return Assessment{}, unavailable("keep assessment", err)
	}
	return Assessment{Success: true, AssessmentID: id, RiskScore: sc.Risk, Classification: sc.Classification,
		RecommendedDecision: sc.Recommended, Decision: Applied(mode, sc.Recommended), TrustedDevice: sig.TrustedDevice,
		Reasons: sc.Reasons, EnforcementMode: mode}, nil
}

// Signals reads what the service observed of a subject and a device
// (hashes from SubjectHash and DeviceHash; deviceHash may be "") without
// counting anything. The Trust API consumes it.
func (m *Module) Signals(ctx context.Context, workspaceID, subjectHash, deviceHash string) (Signals, error) {
	if err := ctx.Err(); err != nil {
		return Signals{}, unavailable("signals", err)
	}
	read := func(key, member string) *actors.Activity {
		return &actors.Activity{Key: key, Member: member, WindowNs: int64(Window), RetainNs: int64(Retention), MaxMembers: MaxCounterparts}
	}
	subj := read(subjectActivityKey(workspaceID, subjectHash), deviceHash)
	subjLabel := &actors.SubjectLabel{Key: subjectLabelKey(workspaceID, subjectHash)}
	asks := []keyed{{subj.Key, subj}, {subjLabel.Key, subjLabel}}
	var dev *actors.Activity
	var devLabel *actors.SubjectLabel
	if deviceHash != "" {
		dev = read(deviceActivityKey(workspaceID, deviceHash), subjectHash)
		devLabel = &actors.SubjectLabel{Key: deviceLabelKey(workspaceID, deviceHash)}
		asks = append(asks, keyed{dev.Key, dev}, keyed{devLabel.Key, devLabel})
	}
	if err := m.askAll(asks...); err != nil {
		return Signals{}, unavailable("account signals", err)
	}
	sig := Signals{SubjectFailures: subj.Failures, DevicesPerSubject: subj.Distinct, HasDevice: deviceHash != "",
		DeviceKnown: subj.Known, DeviceSeen: subj.Seen, SubjectLabel: subjLabel.Label}
	if dev != nil {
		sig.DeviceFailures, sig.SubjectsPerDevice, sig.DeviceLabel = dev.Failures, dev.Distinct, devLabel.Label
		sig.TrustedDevice = m.store.Catalog().TrustedDevice(workspaceID, subjectHash, deviceHash, m.now()) != nil
	}
	return sig, nil
}

// FeedbackRequest is a decoded POST /account/feedback.
type FeedbackRequest struct {
	AssessmentID, Label, ReasonCode string
}

// Feedback is the answer (spec 2.5).
type Feedback struct {
	Success    bool   `json:"success" required:"true"`
	FeedbackID string `json:"feedback_id" required:"true" format:"uuid" doc:"An exact retry (same assessment, label and reason_code) within 5 minutes answers the first feedback_id and changes nothing."`
	Accepted   bool   `json:"accepted" required:"true"`
}

func (r *FeedbackRequest) validate() error {
	if _, err := uuid.Parse(r.AssessmentID); err != nil || len(r.AssessmentID) != 36 {
		return ErrInvalidFeedback.With("assessment_id must be the UUID of an Account Defence assessment")
	}
	if !oneOf(r.Label, Labels) || !oneOf(r.ReasonCode, FeedbackReasons[r.Label]) {
		return ErrInvalidFeedback
	}
	return nil
}

// Feedback labels an assessment of the caller's workspace. A new label is
// kept on the subject and the device for LabelTTL and changes their later
// assessments; an exact retry within FeedbackDedup changes nothing.
func (m *Module) Feedback(ctx context.Context, caller Caller, req FeedbackRequest) (Feedback, error) {
	if err := req.validate(); err != nil {
		return Feedback{}, err
	}
	ws := caller.Workspace
	id := assessmentKey(strings.ToLower(req.AssessmentID))
	get := &actors.GetAssessment{ID: id}
	if err := m.ask.Ask(id, get); err != nil {
		return Feedback{}, unavailable("read assessment", err)
	}
	if !get.Found || get.Assessment.WorkspaceID != ws.ID {
		return Feedback{}, ErrAssessmentNotFound
	}
	ann := &actors.AnnotateAssessment{ID: id, WorkspaceID: ws.ID, FeedbackID: uuid.NewString(), Label: req.Label,
		Reason: req.ReasonCode, DedupNs: int64(FeedbackDedup)}
	if err := m.ask.Ask(id, ann); err != nil {
		return Feedback{}, unavailable("annotate assessment", err)
	}
	if !ann.Found {
		return Feedback{}, ErrAssessmentNotFound
	}
	if !ann.Duplicate {
		exp := m.now().Add(LabelTTL).UnixNano()
		var asks []keyed
		for _, k := range []string{get.Assessment.SubjectKey, get.Assessment.DeviceKey} {
			if k != "" {
				asks = append(asks, keyed{k, &actors.LabelSubject{Key: k, Label: req.Label, Expires: exp}})
			}
		}
		if err := m.askAll(asks...); err != nil {
			return Feedback{}, unavailable("label subject", err)
		}
	}
	return Feedback{Success: true, FeedbackID: ann.FeedbackID, Accepted: true}, nil
}

// TrustRequest is a decoded POST /account/trusted-device.
type TrustRequest struct {
	Action, SubjectID, DeviceID, Label string
}

// TrustResult is the answer.
type TrustResult struct {
	Success   bool       `json:"success" required:"true"`
	Status    string     `json:"status" required:"true" enum:"trusted|revoked"`
	ExpiresAt *time.Time `json:"expires_at,omitempty" doc:"When a trust lapses unless given again (180 days after the last trust); only with status trusted."`
}

func (r *TrustRequest) validate() error {
	if r.Action != ActionTrust && r.Action != ActionRevoke {
		return ErrInvalidTrustAction
	}
	if !ident.Valid(r.SubjectID) {
		return ErrInvalidSubject
	}
	if !ident.Valid(r.DeviceID) {
		return ErrInvalidDevice
	}
	if r.Label != "" && (len(r.Label) > catalog.MaxTrustedDeviceLabel || !ident.Valid(r.Label)) {
		return ErrInvalidTrustAction
	}
	return nil
}

// TrustDevice trusts or revokes a device for a subject, durably (Raft).
func (m *Module) TrustDevice(ctx context.Context, caller Caller, req TrustRequest) (TrustResult, error) {
	if err := req.validate(); err != nil {
		return TrustResult{}, err
	}
	ws := caller.Workspace
	sh, dh := SubjectHash(ws.ScopeKey, req.SubjectID), DeviceHash(ws.ScopeKey, req.DeviceID)
	at := m.now().UTC()
	if req.Action == ActionRevoke {
		if _, err := m.store.Apply(ctx, &catalog.RevokeDevice{WorkspaceID: ws.ID, SubjectHash: sh, DeviceHash: dh, At: at}); err != nil {
			return TrustResult{}, storeErr(err)
		}
		return TrustResult{Success: true, Status: StatusRevoked}, nil
	}
	v, err := m.store.Apply(ctx, &catalog.TrustDevice{WorkspaceID: ws.ID, SubjectHash: sh, DeviceHash: dh, Label: req.Label, At: at})
	if err != nil {
		return TrustResult{}, storeErr(err)
	}
	exp := v.(*catalog.TrustedDevice).ExpiresAt
	return TrustResult{Success: true, Status: StatusTrusted, ExpiresAt: &exp}, nil
}

func storeErr(err error) error {
	if errors.Is(err, catalog.ErrTrustedDevicesFull) {
		_, detail, _ := strings.Cut(err.Error(), "full: ")
		return ErrTrustedDevicesFull.With("%s", detail)
	}
	// Anything else (no leader, a deleted workspace, a timeout) is for the
	// transport's own mapping; it keeps its chain.
	return fmt.Errorf("account: trusted device: %w", err)
}
