package actors

import "github.com/trustd/trustd/platform/lib/resilience"

// Dependency resilience. One entry per dependency key (workspace +
// dependency) holds its circuit breaker, retry budget and bulkhead, and the
// admissions that hold something: a bulkhead slot or a half-open probe. The
// math is package resilience; this file decides the order of the checks and
// what an admission owes when it ends.
//
// Order of an admission: the breaker first (an open circuit refuses before
// anything is spent), then the bulkhead, then the retry budget for retries
// (a refused retry gives its slot and probe back) or a deposit for first
// attempts. Only admissions holding a slot or probe are remembered, so a
// dependency without a bulkhead keeps no per-call state while closed.
//
// A probe belongs to the half-open period it was admitted in (the breaker's
// Since): its feedback decides that period only, and a late answer from an
// earlier period, or from a call admitted while closed, cannot close or
// reopen the breaker. An admission that expires without feedback gives
// its slot and probe back in the sweep.

// breakerIdleEvict is how long a closed, idle breaker with nothing in
// flight is kept before it is forgotten (a forgotten breaker is rebuilt
// closed with an empty window).
const breakerIdleEvict = int64(3600e9) // 1 hour, in ns

// AdmitReason says why an admission was refused.
type AdmitReason uint8

// Reasons of a refused admission.
const (
	AdmitOK AdmitReason = iota
	AdmitCircuitOpen
	AdmitRetryBudget
	AdmitBulkheadFull
)

// String is the API's code for the reason.
func (r AdmitReason) String() string {
	switch r {
	case AdmitCircuitOpen:
		return "circuit-open"
	case AdmitRetryBudget:
		return "retry-budget-exhausted"
	case AdmitBulkheadFull:
		return "bulkhead-full"
	}
	return ""
}

// DependencyConfig is the resilience configuration an op carries, so a
// changed configuration applies on the next call.
type DependencyConfig struct {
	Breaker resilience.BreakerConfig
	Budget  resilience.RetryBudgetConfig
	// MaxConcurrent is the bulkhead limit; 0 means no bulkhead.
	MaxConcurrent int
}

type admission struct {
	expires int64
	bulk    bool
	probe   bool
	epoch   int64 // breaker Since when admitted as a probe
}

type breakerEntry struct {
	br        resilience.Breaker
	budget    resilience.RetryBudget
	budgetCfg resilience.RetryBudgetConfig
	bulk      resilience.Bulkhead
	// admissions holds only admissions that hold a slot or a probe.
	admissions map[string]admission
	nextExpiry int64
	touched    int64
	partition  int32
}

type breakerTable struct {
	m map[string]*breakerEntry
}

func newBreakerTable() *breakerTable { return &breakerTable{m: make(map[string]*breakerEntry)} }

func (t *breakerTable) get(key string, cfg *DependencyConfig, st *State) *breakerEntry {
	now := st.Now
	e := t.m[key]
	if e == nil {
		e = &breakerEntry{admissions: make(map[string]admission), partition: int32(st.Partition)}
		t.m[key] = e
	}
	if cfg != nil && e.budgetCfg != cfg.Budget {
		// A new budget configuration starts an empty budget; an invalid one
		// (refused by the admin API) leaves the zero budget, which refuses
		// every retry: fail closed.
		e.budget, _ = resilience.NewRetryBudget(cfg.Budget)
		e.budgetCfg = cfg.Budget
	}
	e.touched = now
	e.expire(now)
	return e
}

// expire ends admissions whose time ran out: their bulkhead slot and probe
// come back, and they decide nothing about the dependency.
func (e *breakerEntry) expire(now int64) {
	if len(e.admissions) == 0 || now < e.nextExpiry {
		return
	}
	next := int64(1<<63 - 1)
	for id, a := range e.admissions {
		if a.expires > now {
			next = min(next, a.expires)
			continue
		}
		delete(e.admissions, id)
		e.giveBack(a)
	}
	e.nextExpiry = next
}

func (e *breakerEntry) giveBack(a admission) {
	if a.bulk {
		e.bulk.Release()
	}
	if a.probe && e.br.State == resilience.HalfOpen && e.br.Since == a.epoch {
		e.br.ReleaseProbe()
	}
}

func (e *breakerEntry) earliest() int64 {
	x := int64(1<<63 - 1)
	for _, a := range e.admissions {
		x = min(x, a.expires)
	}
	return x
}

// Sweep implements Sweeper.
func (t *breakerTable) Sweep(now int64, budget int) {
	sweep(t.m, budget, func(e *breakerEntry) bool {
		e.expire(now)
		return len(e.admissions) == 0 && e.br.State == resilience.Closed && now-e.touched >= breakerIdleEvict
	})
}

// BreakerAdmit decides whether a call to the dependency Key may go ahead:
// circuit breaker, then bulkhead, then retry budget. An admitted call that
// holds a bulkhead slot or is a half-open probe is remembered as
// AdmissionID until Expires or its feedback.
//
//actors:wire breaker.admit BreakerAdmit BreakerAdmitResult
type BreakerAdmit struct {
	Key         string           `wire:"op"`
	AdmissionID string           `wire:"op"`
	Retry       bool             `wire:"op"`
	Config      DependencyConfig `wire:"op" wireenc:"dependencyConfigPB(&$)" wiredec:"dependencyConfigOf"`
	Expires     int64            `wire:"op"`

	Admitted bool        `wire:"result"`
	Reason   AdmitReason `wire:"result" wiredec:"admitReasonOf"`
	// State is the breaker's state after the decision.
	State resilience.State `wire:"result" wiredec:"breakerStateOf"`
	// RetryAfter is a suggested wait when refused, in ns.
	RetryAfter int64 `wire:"result"`
	// Probe reports a half-open probe.
	Probe bool `wire:"result"`
	// Bulkhead reports that the admission holds a bulkhead slot.
	Bulkhead bool `wire:"result"`
	InFlight int  `wire:"result"`
	// RetriesAvailable is how many retries the budget would grant now.
	RetriesAvailable int64 `wire:"result"`
}

// Apply implements Op.
func (o *BreakerAdmit) Apply(st *State) {
	now := st.Now
	e := Slot(st, KindBreaker, newBreakerTable).get(o.Key, &o.Config, st)
	o.Admitted, o.Reason, o.RetryAfter, o.Probe, o.Bulkhead = false, AdmitOK, 0, false, false
	defer func() {
		o.State, o.InFlight = e.br.State, e.bulk.InFlight
		o.RetriesAvailable = e.budget.Available(now)
	}()

	ok, state, wait := e.br.Allow(o.Config.Breaker, now)
	if !ok {
		o.Reason, o.RetryAfter = AdmitCircuitOpen, wait
		return
	}
	a := admission{expires: o.Expires, probe: state == resilience.HalfOpen, epoch: e.br.Since}
	if o.Config.MaxConcurrent > 0 {
		if !e.bulk.TryAcquire(o.Config.MaxConcurrent) {
			if a.probe {
				e.br.ReleaseProbe()
			}
			o.Reason, o.RetryAfter = AdmitBulkheadFull, int64(1e9)
			if x := e.earliest(); x != 1<<63-1 {
				o.RetryAfter = max(x-now, 1)
			}
			return
		}
		a.bulk = true
	}
	if o.Retry {
		if !e.budget.TryWithdraw(now) {
			e.giveBack(a)
			o.Reason, o.RetryAfter = AdmitRetryBudget, max(o.Config.Budget.TTLNs/10, 1)
			return
		}
	} else {
		e.budget.Deposit(now)
	}
	if a.bulk || a.probe {
		e.admissions[o.AdmissionID] = a
		if len(e.admissions) == 1 || a.expires < e.nextExpiry {
			e.nextExpiry = a.expires
		}
	}
	o.Admitted, o.Probe, o.Bulkhead = true, a.probe, a.bulk
}

// BreakerFeedback reports the outcome of an admitted call. Callers make
// sure each admission reports at most once (a single-use marker); the op
// gives back what the admission still holds and records the outcome where
// it counts: in the window while closed, as a probe result only for a
// live probe of the current half-open period, and nowhere while open.
//
//actors:wire breaker.feedback BreakerFeedback BreakerFeedbackResult
type BreakerFeedback struct {
	Key         string           `wire:"op"`
	AdmissionID string           `wire:"op"`
	Success     bool             `wire:"op"`
	Config      DependencyConfig `wire:"op" wireenc:"dependencyConfigPB(&$)" wiredec:"dependencyConfigOf"`

	// Counted reports that the outcome reached the breaker.
	Counted bool `wire:"result"`
	// State is the breaker's state after the feedback.
	State resilience.State `wire:"result" wiredec:"breakerStateOf"`
}

// Apply implements Op.
func (o *BreakerFeedback) Apply(st *State) {
	now := st.Now
	e := Slot(st, KindBreaker, newBreakerTable).get(o.Key, &o.Config, st)
	a, held := e.admissions[o.AdmissionID]
	if held {
		delete(e.admissions, o.AdmissionID)
		if a.bulk {
			e.bulk.Release()
		}
	}
	o.Counted = false
	switch e.br.State {
	case resilience.Closed:
		e.br.Record(o.Config.Breaker, now, o.Success)
		o.Counted = true
	case resilience.HalfOpen:
		// Record consumes one outstanding probe; only this period's live
		// probe may, or a late answer would decide for a probe in flight.
		if held && a.probe && a.epoch == e.br.Since {
			e.br.Record(o.Config.Breaker, now, o.Success)
			o.Counted = true
		}
	}
	o.State = e.br.State
}

// BreakerPeek reads a dependency's state without changing it (an open
// breaker whose open duration has passed still reads open until the next
// admission turns it half-open).
//
//actors:wire breaker.peek BreakerPeek BreakerPeekResult
type BreakerPeek struct {
	Key string `wire:"op"`

	State    resilience.State `wire:"result" wiredec:"breakerStateOf"`
	Calls    int              `wire:"result"`
	Failures int              `wire:"result"`
	InFlight int              `wire:"result"`
}

// Apply implements Op.
func (o *BreakerPeek) Apply(st *State) {
	t := Slot(st, KindBreaker, newBreakerTable)
	e := t.m[o.Key]
	if e == nil {
		o.State, o.Calls, o.Failures, o.InFlight = resilience.Closed, 0, 0, 0
		return
	}
	e.expire(st.Now)
	o.State, o.Calls, o.Failures, o.InFlight = e.br.State, e.br.Calls, e.br.Failures, e.bulk.InFlight
}
