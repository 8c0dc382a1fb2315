package actors

import (
	gproto "google.golang.org/protobuf/proto"

	"github.com/trustd/trustd/platform/proto/actorpb"
)

// The wire side of the human-verification ops (redeem.go, velocity.go,
// verification.go), and the hand-off of redemption records, which are
// replicated like markers.

func outcomePB(o Outcome) *actorpb.Outcome {
	return &actorpb.Outcome{Codes: o.Codes, Ref: o.Ref, At: o.At}
}

func outcomeOf(m *actorpb.Outcome) Outcome {
	return Outcome{Codes: m.GetCodes(), Ref: m.GetRef(), At: m.GetAt()}
}

func redemptionPB(id string, r *redemption) *actorpb.Redemption {
	return &actorpb.Redemption{Id: id, Expires: r.expires, Key: r.key, Outcome: outcomePB(r.outcome), Partition: uint32(r.partition), Confirmed: r.confirmed}
}

// heldPB encodes the record a redemption met, under the op's id.
func (o *Redeem) heldPB(r *redemption) *actorpb.Redemption {
	if r == nil {
		return nil
	}
	return redemptionPB(o.ID, r)
}

func heldOf(m *actorpb.Redemption) *redemption {
	if m == nil {
		return nil
	}
	r := redemptionOf(m)
	return &r
}

func redemptionOf(m *actorpb.Redemption) redemption {
	return redemption{expires: m.GetExpires(), key: m.GetKey(), outcome: outcomeOf(m.GetOutcome()), partition: int32(m.GetPartition()), confirmed: m.GetConfirmed()}
}

// Replicated implements Exporter: redemption records live on the owner and
// the replica, like markers.
func (t *redeemTable) Replicated() bool { return true }

// Export implements Exporter.
func (t *redeemTable) Export(in func(int) bool, out func(int, []byte)) {
	sets := newPartitionSets(in, out, func() *actorpb.RedemptionSet { return &actorpb.RedemptionSet{} })
	for id, r := range t.m {
		s, ok := sets.of(r.partition)
		if !ok {
			continue
		}
		s.Entries = append(s.Entries, redemptionPB(id, &r))
	}
	sets.emit()
}

// Import implements Exporter: a record the table already holds stays,
// unless it is tentative and the imported one is confirmed (a confirmed
// first outcome is never overturned, see redeem.go); the same record
// keeps the confirmation either side had; a new one is added. So an id
// stays redeemed and keeps one first outcome.
func (t *redeemTable) Import(data []byte, now int64) error {
	var s actorpb.RedemptionSet
	if err := gproto.Unmarshal(data, &s); err != nil {
		return err
	}
	for _, e := range s.Entries {
		if e.Expires <= now {
			continue
		}
		in := redemptionOf(e)
		if cur, ok := t.m[e.Id]; ok && cur.expires > now {
			switch {
			case cur.same(&in):
				cur.confirmed = cur.confirmed || in.confirmed
				cur.expires = max(cur.expires, in.expires)
				t.m[e.Id] = cur
			case in.confirmed && !cur.confirmed:
				t.m[e.Id] = in
			}
			continue
		}
		t.m[e.Id] = in
	}
	return nil
}

func verificationPB(v *Verification) *actorpb.Verification {
	return &actorpb.Verification{Id: v.ID, WorkspaceId: v.WorkspaceID, SiteId: v.SiteID, Hostname: v.Hostname,
		Action: v.Action, ChallengeType: v.ChallengeType, Score: uint32(v.Score), Reasons: v.Reasons,
		VerifiedAt: v.VerifiedAt, Expires: v.Expires, Method: v.Method, Assurance: uint32(v.Assurance), Bindings: v.Bindings,
		SubjectHash: nilIfZero(v.SubjectHash[:]), OperationHash: nilIfZero(v.OperationHash[:])}
}

func verificationPtrPB(v *Verification) *actorpb.Verification {
	if v == nil {
		return nil
	}
	return verificationPB(v)
}

func verificationPtrOf(m *actorpb.Verification) *Verification {
	if m == nil {
		return nil
	}
	v := verificationOf(m)
	return &v
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
