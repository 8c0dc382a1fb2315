package actors

import (
	gproto "google.golang.org/protobuf/proto"

	"github.com/trustd/trustd/proto/actorpb"
)

// The wire side of the human-verification ops (redeem.go, velocity.go,
// assessment.go), and the hand-off of redemption records, which are
// replicated like markers.

func outcomePB(o Outcome) *actorpb.Outcome {
	return &actorpb.Outcome{Codes: o.Codes, Ref: o.Ref, At: o.At}
}

func outcomeOf(m *actorpb.Outcome) Outcome {
	return Outcome{Codes: m.GetCodes(), Ref: m.GetRef(), At: m.GetAt()}
}

func redemptionPB(id string, r *redemption) *actorpb.Redemption {
	return &actorpb.Redemption{Id: id, Expires: r.expires, Key: r.key, Outcome: outcomePB(r.outcome), Partition: uint32(r.partition)}
}

func redemptionOf(m *actorpb.Redemption) redemption {
	return redemption{expires: m.GetExpires(), key: m.GetKey(), outcome: outcomeOf(m.GetOutcome()), partition: int32(m.GetPartition())}
}

// OpKind implements WireOp.
func (*Redeem) OpKind() string { return "redeem" }

// AppendOp implements WireOp.
func (o *Redeem) AppendOp(b []byte) ([]byte, error) {
	m := &actorpb.Redemption{Id: o.ID, Expires: o.Expires, Key: o.Key, Outcome: outcomePB(o.Outcome)}
	if o.Record != nil {
		m.Record = verificationPB(o.Record)
	}
	return appendPB(b, m)
}

// UnmarshalOp implements WireOp.
func (o *Redeem) UnmarshalOp(data []byte) error {
	var m actorpb.Redemption
	err := gproto.Unmarshal(data, &m)
	o.ID, o.Expires, o.Key, o.Outcome, o.Record = m.Id, m.Expires, m.Key, outcomeOf(m.Outcome), nil
	if m.Record != nil {
		v := verificationOf(m.Record)
		o.Record = &v
	}
	return err
}

// AppendResult implements WireOp.
func (o *Redeem) AppendResult(b []byte) ([]byte, error) {
	m := &actorpb.RedeemResult{First: o.First, Replayed: o.Replayed, Outcome: outcomePB(o.Outcome)}
	if o.held != nil {
		m.Held = redemptionPB(o.ID, o.held)
	}
	return appendPB(b, m)
}

// UnmarshalResult implements WireOp.
func (o *Redeem) UnmarshalResult(data []byte) error {
	var m actorpb.RedeemResult
	err := gproto.Unmarshal(data, &m)
	o.First, o.Replayed, o.Outcome, o.held = m.First, m.Replayed, outcomeOf(m.Outcome), nil
	if m.Held != nil {
		r := redemptionOf(m.Held)
		o.held = &r
	}
	return err
}

// Replicated implements Exporter: redemption records live on the owner and
// the replica, like markers.
func (t *redeemTable) Replicated() bool { return true }

// Export implements Exporter.
func (t *redeemTable) Export(in func(int) bool, out func(int, []byte)) {
	sets := map[int32]*actorpb.RedemptionSet{}
	for id, r := range t.m {
		if !in(int(r.partition)) {
			continue
		}
		s := sets[r.partition]
		if s == nil {
			s = &actorpb.RedemptionSet{}
			sets[r.partition] = s
		}
		s.Entries = append(s.Entries, redemptionPB(id, &r))
	}
	for p, s := range sets {
		if b, err := gproto.Marshal(s); err == nil {
			out(int(p), b)
		}
	}
}

// Import implements Exporter: a record the table already holds stays (it
// was confirmed here, or adopted from the replica); a new one is added,
// so an id stays redeemed and keeps one first outcome.
func (t *redeemTable) Import(data []byte, now int64) error {
	var s actorpb.RedemptionSet
	if err := gproto.Unmarshal(data, &s); err != nil {
		return err
	}
	for _, e := range s.Entries {
		if e.Expires <= now {
			continue
		}
		if cur, ok := t.m[e.Id]; ok && cur.expires > now {
			continue
		}
		t.m[e.Id] = redemptionOf(e)
	}
	return nil
}

// OpKind implements WireOp.
func (*Hit) OpKind() string { return "challenge_rate.hit" }

// AppendOp implements WireOp.
func (o *Hit) AppendOp(b []byte) ([]byte, error) {
	return appendPB(b, &actorpb.Hit{Key: o.Key, Window: o.Window})
}

// UnmarshalOp implements WireOp.
func (o *Hit) UnmarshalOp(data []byte) error {
	var m actorpb.Hit
	err := gproto.Unmarshal(data, &m)
	o.Key, o.Window = m.Key, m.Window
	return err
}

// AppendResult implements WireOp.
func (o *Hit) AppendResult(b []byte) ([]byte, error) {
	return appendPB(b, &actorpb.HitResult{Rate: o.Rate, Baseline: o.Baseline})
}

// UnmarshalResult implements WireOp.
func (o *Hit) UnmarshalResult(data []byte) error {
	var m actorpb.HitResult
	err := gproto.Unmarshal(data, &m)
	o.Rate, o.Baseline = m.Rate, m.Baseline
	return err
}

func verificationPB(v *Verification) *actorpb.Verification {
	return &actorpb.Verification{Id: v.ID, WorkspaceId: v.WorkspaceID, SiteId: v.SiteID, Hostname: v.Hostname,
		Action: v.Action, ChallengeType: v.ChallengeType, Score: uint32(v.Score), Reasons: v.Reasons,
		VerifiedAt: v.VerifiedAt, Expires: v.Expires, Method: v.Method, Assurance: uint32(v.Assurance), Bindings: v.Bindings,
		SubjectHash: nilIfZero(v.SubjectHash[:]), OperationHash: nilIfZero(v.OperationHash[:])}
}

func nilIfZero(b []byte) []byte {
	for _, x := range b {
		if x != 0 {
			return b
		}
	}
	return nil
}

func verificationOf(m *actorpb.Verification) Verification {
	v := Verification{ID: m.GetId(), WorkspaceID: m.GetWorkspaceId(), SiteID: m.GetSiteId(), Hostname: m.GetHostname(),
		Action: m.GetAction(), ChallengeType: m.GetChallengeType(), Score: uint16(min(m.GetScore(), 1<<16-1)),
		Reasons: m.GetReasons(), VerifiedAt: m.GetVerifiedAt(), Expires: m.GetExpires(),
		Method: m.GetMethod(), Assurance: uint8(min(m.GetAssurance(), 255)), Bindings: m.GetBindings()}
	copy(v.SubjectHash[:], m.GetSubjectHash())
	copy(v.OperationHash[:], m.GetOperationHash())
	return v
}

// OpKind implements WireOp.
func (*GetVerification) OpKind() string { return "verification.get" }

// AppendOp implements WireOp.
func (o *GetVerification) AppendOp(b []byte) ([]byte, error) {
	return appendPB(b, &actorpb.GetVerification{Id: o.ID})
}

// UnmarshalOp implements WireOp.
func (o *GetVerification) UnmarshalOp(data []byte) error {
	var m actorpb.GetVerification
	err := gproto.Unmarshal(data, &m)
	o.ID = m.Id
	return err
}

// AppendResult implements WireOp.
func (o *GetVerification) AppendResult(b []byte) ([]byte, error) {
	return appendPB(b, &actorpb.GetVerificationResult{Found: o.Found, Verification: verificationPB(&o.A)})
}

// UnmarshalResult implements WireOp.
func (o *GetVerification) UnmarshalResult(data []byte) error {
	var m actorpb.GetVerificationResult
	err := gproto.Unmarshal(data, &m)
	o.Found, o.A = m.Found, verificationOf(m.Verification)
	return err
}
