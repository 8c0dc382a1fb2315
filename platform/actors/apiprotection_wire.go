package actors

import (
	"fmt"

	"github.com/trustd/trustd/platform/proto/actorpb"
)

// The wire side of the API Protection ops (apiprotection.go): the
// mappings their wire tags name; wire_gen.go does the rest.

// fingerprintOf decodes an idempotency fingerprint, which has one length.
func fingerprintOf(b []byte) ([32]byte, error) {
	var f [32]byte
	if len(b) != len(f) {
		return f, fmt.Errorf("actors: idempotency fingerprint of %d bytes", len(b))
	}
	copy(f[:], b)
	return f, nil
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
