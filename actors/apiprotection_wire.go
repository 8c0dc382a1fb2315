package actors

import (
	"fmt"

	gproto "google.golang.org/protobuf/proto"

	"github.com/trustd/trustd/proto/actorpb"
)

// The wire side of the API Protection ops (apiprotection.go). Their
// inputs and results are plain data; each crosses nodes as one actorpb
// message.

func appendPB(b []byte, m gproto.Message) ([]byte, error) {
	return gproto.MarshalOptions{}.MarshalAppend(b, m)
}

// OpKind implements WireOp.
func (*CountHit) OpKind() string { return "velocity.count_hit" }

// AppendOp implements WireOp.
func (o *CountHit) AppendOp(b []byte) ([]byte, error) {
	return appendPB(b, &actorpb.CountHit{Key: o.Key, WindowNs: o.WindowNs, Peek: o.Peek})
}

// UnmarshalOp implements WireOp.
func (o *CountHit) UnmarshalOp(data []byte) error {
	var m actorpb.CountHit
	err := gproto.Unmarshal(data, &m)
	o.Key, o.WindowNs, o.Peek = m.Key, m.WindowNs, m.Peek
	return err
}

// AppendResult implements WireOp.
func (o *CountHit) AppendResult(b []byte) ([]byte, error) {
	return appendPB(b, &actorpb.CountHitResult{Count: o.Count, EndNs: o.EndNs})
}

// UnmarshalResult implements WireOp.
func (o *CountHit) UnmarshalResult(data []byte) error {
	var m actorpb.CountHitResult
	err := gproto.Unmarshal(data, &m)
	o.Count, o.EndNs = m.Count, m.EndNs
	return err
}

// OpKind implements WireOp.
func (*ClaimIdempotency) OpKind() string { return "idempotency.claim" }

// AppendOp implements WireOp.
func (o *ClaimIdempotency) AppendOp(b []byte) ([]byte, error) {
	return appendPB(b, &actorpb.ClaimIdempotency{Key: o.Key, Fingerprint: o.Fingerprint[:], Expires: o.Expires})
}

// UnmarshalOp implements WireOp.
func (o *ClaimIdempotency) UnmarshalOp(data []byte) error {
	var m actorpb.ClaimIdempotency
	if err := gproto.Unmarshal(data, &m); err != nil {
		return err
	}
	if len(m.Fingerprint) != len(o.Fingerprint) {
		return fmt.Errorf("actors: idempotency fingerprint of %d bytes", len(m.Fingerprint))
	}
	o.Key, o.Expires = m.Key, m.Expires
	copy(o.Fingerprint[:], m.Fingerprint)
	return nil
}

// AppendResult implements WireOp.
func (o *ClaimIdempotency) AppendResult(b []byte) ([]byte, error) {
	return appendPB(b, &actorpb.ClaimIdempotencyResult{Outcome: int64(o.Outcome)})
}

// UnmarshalResult implements WireOp.
func (o *ClaimIdempotency) UnmarshalResult(data []byte) error {
	var m actorpb.ClaimIdempotencyResult
	err := gproto.Unmarshal(data, &m)
	o.Outcome = int(m.Outcome)
	return err
}

func assessmentPB(a *Assessment) *actorpb.Assessment {
	return &actorpb.Assessment{Id: a.ID, WorkspaceId: a.WorkspaceID, AppId: a.AppID, PolicyId: a.PolicyID, Risk: a.Risk,
		CreatedNs: a.CreatedNs, ExpiresNs: a.ExpiresNs, SubjectKey: a.SubjectKey, DeviceKey: a.DeviceKey, FeedbackId: a.Feedback.ID,
		FeedbackLabel: a.Feedback.Label, FeedbackReason: a.Feedback.Reason, FeedbackAtNs: a.Feedback.AtNs}
}

func assessmentOf(m *actorpb.Assessment) Assessment {
	return Assessment{ID: m.GetId(), WorkspaceID: m.GetWorkspaceId(), AppID: m.GetAppId(), PolicyID: m.GetPolicyId(),
		Risk: m.GetRisk(), CreatedNs: m.GetCreatedNs(), ExpiresNs: m.GetExpiresNs(), SubjectKey: m.GetSubjectKey(), DeviceKey: m.GetDeviceKey(),
		Feedback: AssessmentFeedback{ID: m.GetFeedbackId(), Label: m.GetFeedbackLabel(), Reason: m.GetFeedbackReason(), AtNs: m.GetFeedbackAtNs()}}
}

// OpKind implements WireOp.
func (*PutAssessment) OpKind() string { return "assessment.put" }

// AppendOp implements WireOp.
func (o *PutAssessment) AppendOp(b []byte) ([]byte, error) {
	return appendPB(b, assessmentPB(&o.Assessment))
}

// UnmarshalOp implements WireOp.
func (o *PutAssessment) UnmarshalOp(data []byte) error {
	var m actorpb.Assessment
	err := gproto.Unmarshal(data, &m)
	o.Assessment = assessmentOf(&m)
	return err
}

// AppendResult implements WireOp: a put has no result.
func (o *PutAssessment) AppendResult(b []byte) ([]byte, error) { return b, nil }

// UnmarshalResult implements WireOp.
func (o *PutAssessment) UnmarshalResult([]byte) error { return nil }

// OpKind implements WireOp.
func (*GetAssessment) OpKind() string { return "assessment.get" }

// AppendOp implements WireOp.
func (o *GetAssessment) AppendOp(b []byte) ([]byte, error) {
	return appendPB(b, &actorpb.GetAssessment{Id: o.ID})
}

// UnmarshalOp implements WireOp.
func (o *GetAssessment) UnmarshalOp(data []byte) error {
	var m actorpb.GetAssessment
	err := gproto.Unmarshal(data, &m)
	o.ID = m.Id
	return err
}

// AppendResult implements WireOp.
func (o *GetAssessment) AppendResult(b []byte) ([]byte, error) {
	return appendPB(b, &actorpb.GetAssessmentResult{Found: o.Found, Assessment: assessmentPB(&o.Assessment)})
}

// UnmarshalResult implements WireOp.
func (o *GetAssessment) UnmarshalResult(data []byte) error {
	var m actorpb.GetAssessmentResult
	err := gproto.Unmarshal(data, &m)
	o.Found, o.Assessment = m.Found, assessmentOf(m.Assessment)
	return err
}

// OpKind implements WireOp.
func (*AnnotateAssessment) OpKind() string { return "assessment.annotate" }

// AppendOp implements WireOp.
func (o *AnnotateAssessment) AppendOp(b []byte) ([]byte, error) {
	return appendPB(b, &actorpb.AnnotateAssessment{Id: o.ID, WorkspaceId: o.WorkspaceID, FeedbackId: o.FeedbackID,
		Label: o.Label, Reason: o.Reason, DedupNs: o.DedupNs})
}

// UnmarshalOp implements WireOp.
func (o *AnnotateAssessment) UnmarshalOp(data []byte) error {
	var m actorpb.AnnotateAssessment
	err := gproto.Unmarshal(data, &m)
	o.ID, o.WorkspaceID, o.FeedbackID, o.Label, o.Reason, o.DedupNs = m.Id, m.WorkspaceId, m.FeedbackId, m.Label, m.Reason, m.DedupNs
	return err
}

// AppendResult implements WireOp.
func (o *AnnotateAssessment) AppendResult(b []byte) ([]byte, error) {
	return appendPB(b, &actorpb.AnnotateAssessmentResult{Found: o.Found, Duplicate: o.Duplicate, SubjectKey: o.SubjectKey})
}

// UnmarshalResult implements WireOp.
func (o *AnnotateAssessment) UnmarshalResult(data []byte) error {
	var m actorpb.AnnotateAssessmentResult
	err := gproto.Unmarshal(data, &m)
	o.Found, o.Duplicate, o.SubjectKey = m.Found, m.Duplicate, m.SubjectKey
	return err
}

// OpKind implements WireOp.
func (*LabelSubject) OpKind() string { return "reputation.label" }

// AppendOp implements WireOp.
func (o *LabelSubject) AppendOp(b []byte) ([]byte, error) {
	return appendPB(b, &actorpb.LabelSubject{Key: o.Key, Label: o.Label, Expires: o.Expires})
}

// UnmarshalOp implements WireOp.
func (o *LabelSubject) UnmarshalOp(data []byte) error {
	var m actorpb.LabelSubject
	err := gproto.Unmarshal(data, &m)
	o.Key, o.Label, o.Expires = m.Key, m.Label, m.Expires
	return err
}

// AppendResult implements WireOp: labelling has no result.
func (o *LabelSubject) AppendResult(b []byte) ([]byte, error) { return b, nil }

// UnmarshalResult implements WireOp.
func (o *LabelSubject) UnmarshalResult([]byte) error { return nil }

// OpKind implements WireOp.
func (*SubjectLabel) OpKind() string { return "reputation.get" }

// AppendOp implements WireOp.
func (o *SubjectLabel) AppendOp(b []byte) ([]byte, error) {
	return appendPB(b, &actorpb.SubjectLabel{Key: o.Key})
}

// UnmarshalOp implements WireOp.
func (o *SubjectLabel) UnmarshalOp(data []byte) error {
	var m actorpb.SubjectLabel
	err := gproto.Unmarshal(data, &m)
	o.Key = m.Key
	return err
}

// AppendResult implements WireOp.
func (o *SubjectLabel) AppendResult(b []byte) ([]byte, error) {
	return appendPB(b, &actorpb.SubjectLabelResult{Label: o.Label})
}

// UnmarshalResult implements WireOp.
func (o *SubjectLabel) UnmarshalResult(data []byte) error {
	var m actorpb.SubjectLabelResult
	err := gproto.Unmarshal(data, &m)
	o.Label = m.Label
	return err
}
