package actors

import (
	"encoding/hex"
	"strings"
)

// Key spaces of actor state, declared once. A router key starts with the
// prefix of its space; the prefix keeps spaces apart (the same id in two
// spaces is two keys), and the key's hash picks the partition that owns
// it. Product modules build keys only through these names, so every kind
// of state the cluster holds is listed here with the op that owns it and
// how long it lives.
//
//	prefix     state                                   ops                                   lifetime
//	l          token bucket + quota counter (live)     Reserve, Refund                       idle eviction
//	s          observe-mode simulation bucket          Reserve, Refund                       idle eviction
//	lease/     concurrency leases of a constraint      LeaseReserve, LeaseRenew, LeaseRelease lease expiry
//	breaker/   circuit breaker, retry budget, bulkhead BreakerAdmit, BreakerFeedback, Peek    config lifetime
//	adm/       single-use dependency admission         Consume                               admission expiry + skew
//	tok/       single-use response token (+verdict)    Redeem                                token expiry + skew
//	sbx/tok/   the same for sandbox tokens             Redeem                                token expiry + skew
//	chl/       single-use challenge                    Consume                               challenge expiry + skew
//	fb/        the one detection-feedback label        Redeem                                the assessment's, ≥ 5 minutes
//	vel/       challenge velocity per IP and per site  Hit                                   velocity window
//	apa/       API Protection assessment               PutAssessment, GetAssessment, Annotate 24 h
//	apv/       API Protection velocity counters        CountHit                              policy window
//	idem/      API Protection idempotency keys         ClaimIdempotency                      24 h
//	rep/       subject reputation (feedback labels)    LabelSubject, SubjectLabel            7 days
//	prf/       single-use step-up proof                Redeem                                proof expiry + skew
//	trv/ trf/  trust decisions and failures per subject Hit                                  the signal window
//	trm/       trust policy matches                    Hit                                   the signal window
//	trd/ tro/  trust decision records, orchestrations  Put/GetAssessment                     24 h
//	aca/ acr/  account activity and labels             Activity, LabelSubject                30 days
//	acv/ acc/  account site rate, assessments          Hit, Put/GetAssessment                1 h, 24 h
//	agn/       agent request nonces                    Consume                               timestamp tolerance + skew
//	agv/ agf/ agd/ agent velocity, failures, denials   Hit, PeekHit                          1 min, 1 h
//	agsc/      agent scope first seen                  Consume                               30 days
//	agr/       agent decision idempotency              Redeem                                the decision's
//	ms…/       messaging preflight nonces, counters    see risk/messaging/keys.go (SpaceMsg…)
//	console-login/  console login attempts (bucket)    Reserve                               idle eviction
//
// A test (keys_registry_test.go) fails on a key-space literal built
// anywhere else.
const (
	SpaceBucket      = "l"
	SpaceSimulation  = "s"
	SpaceLease       = "lease/"
	SpaceBreaker     = "breaker/"
	SpaceAdmission   = "adm/"
	SpaceToken       = "tok/"
	SpaceSandboxTok  = "sbx/tok/"
	SpaceChallenge   = "chl/"
	SpaceFeedback    = "fb/"
	SpaceVelocity    = "vel/"
	SpaceAssessment  = "apa/"
	SpaceAPIVelocity = "apv/"
	SpaceIdempotency = "idem/"
	SpaceReputation  = "rep/"
	SpaceProof       = "prf/"

	// Trust API signals (risk/trust).
	SpaceTrustDecisions = "trv/"
	SpaceTrustFailures  = "trf/"
	SpaceTrustMatches   = "trm/"
	SpaceTrustRecord    = "trd/"
	SpaceTrustOrchestra = "tro/"

	// Account Defence (risk/account).
	SpaceAccountActivity   = "aca/"
	SpaceAccountLabel      = "acr/"
	SpaceAccountSiteRate   = "acv/"
	SpaceAccountAssessment = "acc/"

	// Agent trust (agents).
	SpaceAgentNonce    = "agn/"
	SpaceAgentVelocity = "agv/"
	SpaceAgentFailures = "agf/"
	SpaceAgentDenials  = "agd/"
	SpaceAgentScope    = "agsc/"
	SpaceAgentDecision = "agr/"

	// Messaging preflight (risk/messaging/keys.go).
	SpaceMsgNonce    = "msn/"
	SpaceMsgPrefix   = "msp/"
	SpaceMsgNumber   = "msd/"
	SpaceMsgSubject  = "mss/"
	SpaceMsgCountry  = "msc/"
	SpaceMsgBlock    = "msb/"
	SpaceMsgSends    = "msx/"
	SpaceMsgVerified = "msv/"
	SpaceMsgFailed   = "msf/"
	SpaceMsgRef      = "msr/"
	SpaceMsgMessage  = "msm/"
	SpaceMsgEvent    = "mse/"

	// The console's login attempts per address and account.
	SpaceConsoleLogin = "console-login/"
)

// Spaces lists every key space, for the registry's test and for tools
// that classify keys.
var Spaces = []string{
	SpaceBucket, SpaceSimulation, SpaceLease, SpaceBreaker, SpaceAdmission,
	SpaceToken, SpaceSandboxTok, SpaceChallenge, SpaceFeedback, SpaceVelocity,
	SpaceAssessment, SpaceAPIVelocity, SpaceIdempotency, SpaceReputation, SpaceProof,
	SpaceTrustDecisions, SpaceTrustFailures, SpaceTrustMatches, SpaceTrustRecord, SpaceTrustOrchestra,
	SpaceAccountActivity, SpaceAccountLabel, SpaceAccountSiteRate, SpaceAccountAssessment,
	SpaceAgentNonce, SpaceAgentVelocity, SpaceAgentFailures, SpaceAgentDenials, SpaceAgentScope, SpaceAgentDecision,
	SpaceMsgNonce, SpaceMsgPrefix, SpaceMsgNumber, SpaceMsgSubject, SpaceMsgCountry, SpaceMsgBlock,
	SpaceMsgSends, SpaceMsgVerified, SpaceMsgFailed, SpaceMsgRef, SpaceMsgMessage, SpaceMsgEvent,
	SpaceConsoleLogin,
}

// AssessmentKey is the key of the API Protection assessment id (a UUID in
// any case).
func AssessmentKey(id string) string { return SpaceAssessment + strings.ToLower(id) }

// MarkerKey is the key of a 128-bit single-use id in space.
func MarkerKey(space string, id [16]byte) string {
	var b [48]byte
	n := copy(b[:], space)
	n += hex.Encode(b[n:], id[:])
	return string(b[:n])
}

// BreakerKey is the key of a workspace's dependency.
func BreakerKey(workspaceID, dependencyID string) string {
	return SpaceBreaker + workspaceID + "/" + dependencyID
}
