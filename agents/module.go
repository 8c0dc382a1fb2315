package agents

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/google/uuid"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
)

// The decisions of Agent Trust: which of the two signature schemes a
// request uses and what a failed signature costs the agent, the behaviour
// the cluster observed of it, the idempotency of a decision, the approval
// it creates, the single consumption of an approval and the risk a denial
// adds. The transport (agents/api) decodes the HTTP request into a Message,
// calls the Module and encodes its answer; it decides nothing.

// Errors of the decision and approval operations, beyond Codes and
// HTTPSigCodes.
var (
	// ErrRequestReused is a request_id already decided with another body.
	ErrRequestReused = errcode.New("agent-request-id-reused", errcode.Conflict, "this request_id was already used with a different body")
	// ErrApprovalNotFound is an approval the agent (or the workspace) does
	// not have.
	ErrApprovalNotFound = errcode.New("agent-approval-not-found", errcode.NotFound, "the agent has no approval request with this approval_id")
	// ErrApprovalConsumed is an approval whose one execution happened.
	ErrApprovalConsumed = errcode.New("agent-approval-consumed", errcode.Conflict, "the approval was already consumed: it authorised one execution, which has happened")
	// ErrApprovalNotPending is an approve or deny of a decided or expired
	// approval.
	ErrApprovalNotPending = errcode.New("agent-approval-not-pending", errcode.Conflict, "the approval is not pending (already decided or expired)")
)

// Errors lists every code of Agent Trust, for the contract's ApiError
// list, in the order the contract has always listed them.
var Errors = append(append(append([]*errcode.Code(nil), Codes()...), HTTPSigCodes()...),
	ErrDecisionInput, ErrInvalidAgent, ErrAgentMissing,
	ErrRequestReused, ErrApprovalNotFound, ErrApprovalConsumed, ErrApprovalNotPending)

// Retention of what a decision leaves behind: its stored answer (for
// retries with the same request_id) and the approval request it opened.
// Constants, not configuration (DESIGN.md, "Not done yet").
const (
	DecisionRetention = 24 * time.Hour
	ApprovalTTL       = time.Hour
)

// applyTimeout bounds one replicated change made by a decision, as the
// transport bounds an admin change.
const applyTimeout = 10 * time.Second

// Store replicates catalog changes through Raft (persistence.Store).
type Store interface {
	Apply(ctx context.Context, cmd catalog.Command) (any, error)
}

// Config tunes the module.
type Config struct {
	// SealKey derives the key that seals agents' HMAC secrets in the
	// catalog (the cluster key).
	SealKey string
	// Tolerance bounds signed requests' timestamps both ways (0:
	// DefaultTolerance).
	Tolerance time.Duration
}

// Module is Agent Trust. It keeps no state of its own: agents and
// approvals are catalog records (Raft), nonces, behaviour counters and
// stored decisions are actor state reached through ask.
type Module struct {
	ask    actors.Asker
	store  Store
	sealer *Sealer
	tol    time.Duration
	now    func() time.Time
}

// New builds the module over the cluster's router (ask), the Raft store
// and the clock (nil: time.Now).
func New(cfg Config, ask actors.Asker, store Store, now func() time.Time) *Module {
	if now == nil {
		now = time.Now
	}
	return &Module{ask: ask, store: store, sealer: NewSealer(cfg.SealKey), tol: cfg.Tolerance, now: now}
}

// Register builds the record of a new agent of workspace and its HMAC
// secret, shown once (sealed in the record).
func (m *Module) Register(workspace string, sp Spec, now time.Time) (catalog.Agent, string, error) {
	return NewAgent(m.sealer, workspace, sp, now)
}

// RotateSecret gives a copy of a a new current secret (see Rotate).
func (m *Module) RotateSecret(a catalog.Agent, overlap time.Duration, now time.Time) (catalog.Agent, string, error) {
	return Rotate(m.sealer, a, overlap, now)
}

// Message is a signed request as the transport received it, before its
// body is decoded.
type Message struct {
	Method string
	// Host is the Host header as received; Path the request path as
	// received (a query after '?' is ignored), RawQuery the query.
	Host, Path, RawQuery string
	Header               http.Header
	Body                 []byte
}

// Authenticate verifies msg with the HMAC scheme (X-Service-*), or with an
// RFC 9421 signature when it carries Signature-Input or Signature (never
// both), against the agents of cat, and consumes its nonce. A known
// agent's failed signature counts against its risk (agf/, per hour).
func (m *Module) Authenticate(cat *catalog.Catalog, msg Message) (Identity, error) {
	v := Verifier{Dir: CatalogDirectory{Cat: cat, Sealer: m.sealer}, Nonces: MarkerNonces{Router: m.ask},
		Tolerance: m.tol, Now: m.now}
	rfc, err := UsesHTTPSig(msg.Header)
	if err != nil {
		return Identity{}, err
	}
	var id Identity
	var agentID string
	if rfc {
		req := SignedRequest{Method: msg.Method, Authority: NormalizeAuthority(msg.Host),
			Path: msg.Path, RawQuery: msg.RawQuery, Header: msg.Header, Body: msg.Body}
		if i := strings.IndexByte(req.Path, '?'); i >= 0 {
			req.Path = req.Path[:i]
		}
		id, err = v.VerifyHTTPSig(req)
		agentID = HTTPSigKeyID(msg.Header)
		if id.ID != uuid.Nil {
			agentID = id.ID.String() // the keyid may be a thumbprint
		}
	} else {
		req := Request{Agent: msg.Header.Get(HeaderAgent), Timestamp: msg.Header.Get(HeaderTimestamp),
			Nonce: msg.Header.Get(HeaderNonce), Signature: msg.Header.Get(HeaderSignature), Body: msg.Body}
		id, err = v.Verify(req)
		agentID = req.Agent
	}
	if err != nil {
		if errors.Is(err, ErrSignatureInvalid) || errors.Is(err, ErrHTTPSigSignature) {
			if aid, perr := uuid.Parse(agentID); perr == nil && cat.Agents[aid.String()] != nil {
				_ = m.ask.Ask(failuresKey(aid.String()), &actors.Hit{Key: failuresKey(aid.String()), Window: int64(time.Hour)})
			}
		}
		return id, err
	}
	return id, nil
}

// The actor keys of an agent's behaviour and records (DESIGN.md,
// "Decisions"; the key spaces are registered in platform/actors/keys.go): velocity
// per minute, failed signatures and denied approvals per hour, the first
// use of a scope, a stored decision.
func velocityKey(agentID string) string     { return actors.SpaceAgentVelocity + agentID }
func failuresKey(agentID string) string     { return actors.SpaceAgentFailures + agentID }
func deniedKey(agentID string) string       { return actors.SpaceAgentDenials + agentID }
func scopeKey(agentID, scope string) string { return actors.SpaceAgentScope + agentID + "/" + scope }
func decisionKey(agentID, request string) string {
	return actors.SpaceAgentDecision + agentID + "/" + request
}

// Decision is the answer of a decision (spec 2.6), stored whole as the
// outcome of its request_id so a retry gets it back unchanged.
type Decision struct {
	Success             bool     `json:"success"`
	DecisionID          string   `json:"decision_id"`
	AgentID             string   `json:"agent_id"`
	IdentityVerified    bool     `json:"identity_verified"`
	RecommendedDecision string   `json:"recommended_decision"`
	Decision            string   `json:"decision"`
	RiskScore           int      `json:"risk_score"`
	Classification      string   `json:"classification"`
	ReasonCodes         []string `json:"reason_codes"`
	ApprovalRequestID   string   `json:"approval_request_id,omitempty"`
}

// Decide answers the verified agent id's signed decision body: decoded
// strictly, validated, judged by the agent's rules of cat and its observed
// behaviour, made idempotent by request_id (a retry with the same body
// gets the stored answer, another body ErrRequestReused), and, when a
// human is needed, the approval request created by the first use only.
func (m *Module) Decide(ctx context.Context, cat *catalog.Catalog, id Identity, body []byte) (Decision, error) {
	var in DecisionInput
	if err := DecodeBody(body, &in); err != nil {
		return Decision{}, err
	}
	if err := in.Validate(); err != nil {
		return Decision{}, err
	}
	a := cat.Agents[id.ID.String()]
	if a == nil {
		// Authenticate found it in this catalog version: only a caller
		// that mixed versions gets here.
		return Decision{}, ErrUnknownAgent
	}
	aid := a.ID
	now := m.now()
	b := m.behaviour(a, in.Scope, now)
	out := Decide(a, in, b)
	ans := Decision{Success: true, DecisionID: uuid.NewString(), AgentID: aid, IdentityVerified: true,
		RecommendedDecision: out.Recommended, Decision: out.Decision, RiskScore: out.RiskScore,
		Classification: out.Classification, ReasonCodes: out.ReasonCodes}
	if out.Decision == DecisionApproval {
		ans.ApprovalRequestID = uuid.NewString()
	}
	stored, _ := json.Marshal(ans)
	sum := sha256.Sum256(body)
	red := &actors.Redeem{ID: decisionKey(aid, in.RequestID), Key: hex.EncodeToString(sum[:]),
		Expires: now.Add(DecisionRetention).UnixNano(), Outcome: actors.Outcome{Ref: string(stored), At: now.UnixNano()}}
	if err := m.ask.Ask(red.ID, red); err != nil {
		return Decision{}, err
	}
	switch {
	case red.Replayed:
		var prev Decision
		if err := json.Unmarshal([]byte(red.Outcome.Ref), &prev); err != nil {
			return Decision{}, err
		}
		return prev, nil
	case !red.First:
		return Decision{}, ErrRequestReused
	}
	if ans.ApprovalRequestID != "" {
		ap := catalog.Approval{ID: ans.ApprovalRequestID, WorkspaceID: a.WorkspaceID, AgentID: aid, RequestID: in.RequestID,
			Action: in.Action, Scope: in.Scope, ResourceID: in.ResourceID, SubjectID: in.SubjectID, Summary: in.Summary,
			Status: "pending", CreatedAt: now.UTC(), ExpiresAt: now.Add(ApprovalTTL).UTC()}
		if _, err := m.apply(ctx, &catalog.CreateApproval{Approval: ap}); err != nil {
			return Decision{}, err
		}
	}
	return ans, nil
}

// behaviour gathers what the cluster observed of agent a: this decision
// counts towards its velocity; failures and denials are read with
// actors.PeekHit, which counts nothing (only a failed signature and a
// denial feed those counters); a scope it may ask for is new on its first
// use in 30 days. A counter that does not answer counts as nothing
// observed (the decision still runs on the agent's rules): that includes
// a peer of a previous build during a rolling upgrade, which does not know
// the peek and answers an unknown op.
func (m *Module) behaviour(a *catalog.Agent, scope string, now time.Time) Behaviour {
	aid := a.ID
	vel := &actors.Hit{Key: velocityKey(aid), Window: int64(time.Minute)}
	fails := &actors.PeekHit{Key: failuresKey(aid), Window: int64(time.Hour)}
	denied := &actors.PeekHit{Key: deniedKey(aid), Window: int64(time.Hour)}
	b := Behaviour{}
	if err := m.ask.Ask(vel.Key, vel); err == nil {
		b.Rate, b.Baseline = vel.Rate, vel.Baseline
	}
	if err := m.ask.Ask(fails.Key, fails); err == nil {
		b.FailedSignatures = fails.Rate
	}
	if err := m.ask.Ask(denied.Key, denied); err == nil {
		b.DeniedApprovals = denied.Rate
	}
	if ScopeAllowed(a, scope) {
		seen := &actors.Consume{ID: scopeKey(aid, scope), Expires: now.Add(30 * 24 * time.Hour).UnixNano()}
		if err := m.ask.Ask(seen.ID, seen); err == nil {
			b.NewScope = seen.First
		}
	}
	return b
}

// StatusInput is the signed body of an approval status read.
type StatusInput struct {
	ApprovalID string `json:"approval_id"`
}

// Status is the answer of an approval status read (spec 2.6).
type Status struct {
	ApprovalID string
	Status     string // pending | approved | denied | expired
	Action     string
	Scope      string
	// Consumed is true only in the one answer that consumed the approval:
	// the agent may execute exactly then.
	Consumed bool
}

// ApprovalStatus reads the verified agent id's approval named by the
// signed body and, on the first read after it was approved, consumes it
// through Raft: of any number of concurrent reads through any nodes
// exactly one answers Consumed; every later read is ErrApprovalConsumed.
func (m *Module) ApprovalStatus(ctx context.Context, cat *catalog.Catalog, id Identity, body []byte) (Status, error) {
	var in StatusInput
	if err := DecodeBody(body, &in); err != nil {
		return Status{}, err
	}
	aid := id.ID.String()
	cur := cat.Approvals[in.ApprovalID]
	if cur == nil || cur.AgentID != aid {
		return Status{}, ErrApprovalNotFound
	}
	now := m.now()
	st := cur.StatusAt(now)
	if !cur.ConsumedAt.IsZero() {
		return Status{}, ErrApprovalConsumed
	}
	ans := Status{ApprovalID: cur.ID, Status: st, Action: cur.Action, Scope: cur.Scope}
	if st == "approved" {
		v, err := m.apply(ctx, &catalog.ConsumeApproval{AgentID: aid, ID: cur.ID, At: now.UTC()})
		if err != nil {
			return Status{}, err
		}
		r := v.(*catalog.ConsumeResult)
		if !r.Consumed {
			if !r.Approval.ConsumedAt.IsZero() {
				return Status{}, ErrApprovalConsumed
			}
			ans.Status = r.Approval.StatusAt(now)
		}
		ans.Consumed = r.Consumed
	}
	return ans, nil
}

// DecideApproval approves or denies workspace's pending approval
// approvalID of cat, recording by (the transport checked its length). A
// denial raises the agent's risk (agd/, per hour): observed behaviour of
// its next decisions.
func (m *Module) DecideApproval(ctx context.Context, cat *catalog.Catalog, workspace, approvalID string, approve bool, by string) (*catalog.Approval, error) {
	cur := cat.Approvals[approvalID]
	if cur == nil || cur.WorkspaceID != workspace {
		return nil, ErrApprovalNotFound
	}
	if st := cur.StatusAt(m.now()); st != "pending" {
		return nil, ErrApprovalNotPending.With("the approval is %s", st)
	}
	v, err := m.apply(ctx, &catalog.DecideApproval{WorkspaceID: workspace, ID: approvalID, Approve: approve, By: by, At: m.now().UTC()})
	if err != nil {
		return nil, err
	}
	if !approve {
		_ = m.ask.Ask(deniedKey(cur.AgentID), &actors.Hit{Key: deniedKey(cur.AgentID), Window: int64(time.Hour)})
	}
	return v.(*catalog.Approval), nil
}

func (m *Module) apply(ctx context.Context, cmd catalog.Command) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, applyTimeout)
	defer cancel()
	return m.store.Apply(ctx, cmd)
}
