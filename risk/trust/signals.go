package trust

import (
	"context"
	"encoding/base64"
	"time"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/lib/ratelimit"
)

// SignalSource reads what the service observed of a subject (and, when
// known, a device). Account Defence (risk/account) implements it with its
// own counters; ActorSignals is what exists without it. subjectHash and
// deviceHash are SubjectHash/DeviceHash values, never raw identifiers.
type SignalSource interface {
	SubjectSignals(ctx context.Context, workspace, subjectHash, deviceHash string) (Signals, error)
}

// SubjectHash is the keyed hash a subject is stored under in every module
// (the same as API Protection's, so feedback labels are shared): base64url
// of HMAC(workspace scope key, "subject\x00" + id).
func SubjectHash(scopeKey []byte, subject string) string {
	h := ratelimit.HashScope(scopeKey, "subject\x00"+subject)
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// DeviceHash is the keyed hash a device is stored under: base64url of
// HMAC(workspace scope key, "device\x00" + id).
func DeviceHash(scopeKey []byte, device string) string {
	h := ratelimit.HashScope(scopeKey, "device\x00"+device)
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// bindHash is the 16-byte binding of a value in a proof: the first half of
// the workspace-keyed hash of kind and value.
func bindHash(scopeKey []byte, kind, v string) [16]byte {
	h := ratelimit.HashScope(scopeKey, kind+"\x00"+v)
	var out [16]byte
	copy(out[:], h[:16])
	return out
}

// SubjectBinding is the subject binding a proof carries for subject.
func SubjectBinding(scopeKey []byte, subject string) [16]byte {
	return bindHash(scopeKey, "subject", subject)
}

// OperationBinding is the operation binding a proof carries for ref.
func OperationBinding(scopeKey []byte, ref string) [16]byte {
	return bindHash(scopeKey, "operation", ref)
}

// Key spaces of the trust API's actor state. Every key embeds the
// workspace and a keyed hash, never a raw identifier.
func repKey(ws, subjectHash string) string     { return actors.SpaceReputation + ws + "/" + subjectHash }
func decisionsKey(ws, subject string) string   { return actors.SpaceTrustDecisions + ws + "/" + subject }
func failuresKey(ws, subject string) string    { return actors.SpaceTrustFailures + ws + "/" + subject }
func matchesKey(ws, policy string) string      { return actors.SpaceTrustMatches + ws + "/" + policy }
func decisionRecordKey(id string) string       { return actors.SpaceTrustRecord + id }
func orchestratedKey(assessment string) string { return actors.SpaceTrustOrchestra + assessment }

// Windows of the trust counters.
const (
	SignalWindow = 5 * time.Minute
	MatchWindow  = 24 * time.Hour
)

// ActorSignals reads the signals that exist today: the subject's latest
// feedback label (API Protection and trust feedback), the trust decisions
// and failed step-up proofs counted for the subject in the current
// 5-minute window. It knows no devices; TrustedDevice stays false until
// Account Defence provides it.
type ActorSignals struct{ Router actors.PartitionAsker }

// SubjectSignals implements SignalSource.
func (a ActorSignals) SubjectSignals(_ context.Context, workspace, subjectHash, _ string) (Signals, error) {
	var s Signals
	lbl := &actors.SubjectLabel{Key: repKey(workspace, subjectHash)}
	if err := a.Router.Ask(lbl.Key, lbl); err != nil {
		return s, err
	}
	dec := &actors.CountHit{Key: decisionsKey(workspace, subjectHash), WindowNs: int64(SignalWindow), Peek: true}
	if err := a.Router.Ask(dec.Key, dec); err != nil {
		return s, err
	}
	var b [16]byte
	if raw, err := base64.RawURLEncoding.DecodeString(subjectHash); err == nil {
		copy(b[:], raw)
	}
	fail := &actors.CountHit{Key: failuresKeyBinding(workspace, b), WindowNs: int64(SignalWindow), Peek: true}
	if err := a.Router.Ask(fail.Key, fail); err != nil {
		return s, err
	}
	s.Label, s.Decisions5m, s.FailedAttempts5m = lbl.Label, dec.Count, fail.Count
	return s, nil
}
