package trust

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
)

// Module is the Trust API: decisions, step-up proof checks, orchestration
// with signed receipts and feedback. Required collaborators are fields set
// by New; it holds no request state.
type Module struct {
	env     *Env
	cache   *Cache
	ask     actors.PartitionAsker
	signals SignalSource
	now     func() time.Time
}

// New builds the module. signals nil means ActorSignals over ask.
func New(ask actors.PartitionAsker, signals SignalSource, now func() time.Time) (*Module, error) {
	env, err := NewEnv()
	if err != nil {
		return nil, err
	}
	if signals == nil {
		signals = ActorSignals{Router: ask}
	}
	return &Module{env: env, cache: NewCache(env), ask: ask, signals: signals, now: now}, nil
}

// SetSignals replaces the signal source (Account Defence plugs in here).
func (m *Module) SetSignals(s SignalSource) { m.signals = s }

// Env is the module's rule environment (the admin API compiles with it).
func (m *Module) Env() *Env { return m.env }

// Caller is who asked: the workspace and the application (a site or a
// mobile app) whose credential authenticated the call, and the channel
// (server or mobile).
type Caller struct {
	Workspace *catalog.Workspace
	AppID     string
	Channel   string
}

// DecisionResult is a decision with its id (for feedback).
type DecisionResult struct {
	DecisionID string
	Decision
}

// decisionTTL is how long a decision can be labelled by feedback.
const decisionTTL = 24 * time.Hour

// Decide answers POST /trust/decision.
func (m *Module) Decide(_ context.Context, cat *catalog.Catalog, who Caller, req DecisionRequest) (DecisionResult, error) {
	if err := req.Validate(); err != nil {
		return DecisionResult{}, err
	}
	ws := who.Workspace
	subject := SubjectHash(ws.ScopeKey, req.SubjectID)
	d, err := m.evaluate(cat, who, req, subject, true)
	if err != nil {
		return DecisionResult{}, err
	}
	now := m.now()
	id := uuid.NewString()
	rec := actors.Assessment{ID: id, WorkspaceID: ws.ID, AppID: who.AppID, PolicyID: "trust/" + d.Decision, Risk: d.Risk.Score,
		CreatedNs: now.UnixNano(), ExpiresNs: now.Add(decisionTTL).UnixNano(), SubjectKey: repKey(ws.ID, subject)}
	if err := m.ask.Ask(decisionRecordKey(id), &actors.PutAssessment{Assessment: rec}); err != nil {
		return DecisionResult{}, err
	}
	return DecisionResult{DecisionID: id, Decision: d}, nil
}

// evaluate reads the subject's signals, counts the decision when count is
// set, runs the workspace's rules and counts every rule that fired.
func (m *Module) evaluate(cat *catalog.Catalog, who Caller, req DecisionRequest, subject string, count bool) (Decision, error) {
	ws := who.Workspace
	if count {
		hit := &actors.CountHit{Key: decisionsKey(ws.ID, subject), WindowNs: int64(SignalWindow)}
		if err := m.ask.Ask(hit.Key, hit); err != nil {
			return Decision{}, err
		}
	}
	device := ""
	if req.DeviceID != "" {
		device = DeviceHash(ws.ScopeKey, req.DeviceID)
	}
	sig, serr := m.signals.SubjectSignals(context.Background(), ws.ID, subject, device)
	rs := Rules(m.cache, cat, ws.ID)
	d := Evaluate(rs.Rules, Input{Request: req, Channel: who.Channel, Signals: sig}, serr == nil)
	if len(rs.Broken) > 0 && d.Risk.EngineStatus == EngineOK {
		d.Risk.EngineStatus = EngineDegraded
	}
	for _, list := range [][]Match{d.Risk.MatchedRules, d.Observed} {
		for _, r := range list {
			// Best effort: a lost count never changes a decision.
			_ = m.ask.Ask(matchesKey(ws.ID, r.PolicyName), &actors.CountHit{Key: matchesKey(ws.ID, r.PolicyName), WindowNs: int64(MatchWindow)})
		}
	}
	return d, nil
}

// Matches reads how often the rule called name fired (enforced, or would
// have in observe mode) in the current UTC day.
func (m *Module) Matches(workspace, name string) (int64, error) {
	op := &actors.CountHit{Key: matchesKey(workspace, name), WindowNs: int64(MatchWindow), Peek: true}
	if err := m.ask.Ask(op.Key, op); err != nil {
		return 0, err
	}
	return op.Count, nil
}
