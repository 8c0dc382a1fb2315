package actors

import (
	"fmt"

	gproto "google.golang.org/protobuf/proto"

	"github.com/trustd/trustd/platform/lib/resilience"
	"github.com/trustd/trustd/platform/proto/actorpb"
)

// The wire side of the breaker ops (breaker.go), and the
// hand-off of breakers to a partition's new owner on a planned move. The
// breaker, its bulkhead and the admissions holding a slot or probe move;
// the retry budget does not (its slots are resilience's own) and restarts
// on the new owner with its reserve only, which at most grants one
// reserve's worth of retries more than the old owner would have.

func dependencyConfigPB(c *DependencyConfig) *actorpb.DependencyConfig {
	b := &c.Breaker
	return &actorpb.DependencyConfig{
		Breaker: &actorpb.BreakerConfig{WindowSize: int64(b.WindowSize), MinimumCalls: int64(b.MinimumCalls),
			FailureRateThreshold: b.FailureRateThreshold, ConsecutiveFailures: int64(b.ConsecutiveFailures),
			OpenDurationNs: b.OpenDurationNs, HalfOpenProbes: int64(b.HalfOpenProbes)},
		Budget:        &actorpb.RetryBudgetConfig{TtlNs: c.Budget.TTLNs, MinPerSecond: c.Budget.MinPerSecond, Ratio: c.Budget.Ratio},
		MaxConcurrent: int64(c.MaxConcurrent),
	}
}

func dependencyConfigOf(m *actorpb.DependencyConfig) DependencyConfig {
	b, r := m.GetBreaker(), m.GetBudget()
	return DependencyConfig{
		Breaker: resilience.BreakerConfig{WindowSize: int(b.GetWindowSize()), MinimumCalls: int(b.GetMinimumCalls()),
			FailureRateThreshold: b.GetFailureRateThreshold(), ConsecutiveFailures: int(b.GetConsecutiveFailures()),
			OpenDurationNs: b.GetOpenDurationNs(), HalfOpenProbes: int(b.GetHalfOpenProbes())},
		Budget:        resilience.RetryBudgetConfig{TTLNs: r.GetTtlNs(), MinPerSecond: r.GetMinPerSecond(), Ratio: r.GetRatio()},
		MaxConcurrent: int(m.GetMaxConcurrent()),
	}
}

func breakerPB(b *resilience.Breaker) *actorpb.Breaker {
	return &actorpb.Breaker{State: uint32(b.State), Since: b.Since, Failed: b.Failed[:], Size: int64(b.Size),
		Next: int64(b.Next), Calls: int64(b.Calls), Failures: int64(b.Failures), Consecutive: int64(b.Consecutive),
		Probes: int64(b.Probes), Successes: int64(b.Successes)}
}

// breakerOf decodes a handed-off breaker; one that could not have been
// produced by resilience is refused rather than trusted.
func breakerOf(m *actorpb.Breaker) (resilience.Breaker, error) {
	b := resilience.Breaker{State: resilience.State(m.GetState()), Since: m.GetSince(), Size: int(m.GetSize()),
		Next: int(m.GetNext()), Calls: int(m.GetCalls()), Failures: int(m.GetFailures()),
		Consecutive: int(m.GetConsecutive()), Probes: int(m.GetProbes()), Successes: int(m.GetSuccesses())}
	if m.GetState() > uint32(resilience.HalfOpen) || len(m.GetFailed()) > len(b.Failed) ||
		b.Size < 0 || b.Size > resilience.MaxWindowSize || b.Calls < 0 || b.Calls > b.Size ||
		b.Failures < 0 || b.Failures > b.Calls || b.Probes < 0 || b.Successes < 0 || b.Consecutive < 0 {
		return resilience.Breaker{}, fmt.Errorf("actors: handed-off breaker out of range")
	}
	copy(b.Failed[:], m.GetFailed())
	return b, nil
}

// admitReasonOf decodes an admission's reason; an unknown one is refused.
func admitReasonOf(r uint32) (AdmitReason, error) {
	if r > uint32(AdmitBulkheadFull) {
		return 0, fmt.Errorf("actors: admission answer with reason %d", r)
	}
	return AdmitReason(r), nil
}

// breakerStateOf decodes a breaker state; an unknown one is refused.
func breakerStateOf(s uint32) (resilience.State, error) {
	if s > uint32(resilience.HalfOpen) {
		return 0, fmt.Errorf("actors: answer with breaker state %d", s)
	}
	return resilience.State(s), nil
}

// restrictiveness orders breaker states: open refuses most.
func restrictiveness(s resilience.State) int {
	switch s {
	case resilience.Open:
		return 2
	case resilience.HalfOpen:
		return 1
	}
	return 0
}

// Replicated implements Exporter: breakers live on their owner only.
func (t *breakerTable) Replicated() bool { return false }

// Export implements Exporter.
func (t *breakerTable) Export(in func(int) bool, out func(int, []byte)) {
	sets := newPartitionSets(in, out, func() *actorpb.BreakerTable { return &actorpb.BreakerTable{} })
	for k, e := range t.m {
		tb, ok := sets.of(e.partition)
		if !ok {
			continue
		}
		pe := &actorpb.BreakerEntry{Key: k, Breaker: breakerPB(&e.br), Touched: e.touched, Partition: uint32(e.partition)}
		for id, a := range e.admissions {
			pe.Admissions = append(pe.Admissions, &actorpb.Admission{Id: id, Expires: a.expires, Bulk: a.bulk, Probe: a.probe, Epoch: a.epoch})
		}
		tb.Entries = append(tb.Entries, pe)
	}
	sets.emit()
}

// Import implements Exporter. Against a breaker the new owner already
// holds, the more restrictive state wins (open over half-open over
// closed; between two closed ones, the one with more failures), the
// admissions of both are kept, and the bulkhead counts the slots they
// hold, so a hand-off neither closes a circuit nor frees a slot early.
func (t *breakerTable) Import(data []byte, now int64) error {
	var tb actorpb.BreakerTable
	if err := gproto.Unmarshal(data, &tb); err != nil {
		return err
	}
	for _, in := range tb.Entries {
		br, err := breakerOf(in.Breaker)
		if err != nil {
			return err
		}
		e := t.m[in.Key]
		if e == nil {
			e = &breakerEntry{br: br, admissions: make(map[string]admission, len(in.Admissions)), partition: int32(in.Partition)}
			t.m[in.Key] = e
		} else if r, cur := restrictiveness(br.State), restrictiveness(e.br.State); r > cur || (r == cur && br.Failures > e.br.Failures) {
			e.br = br
		}
		e.touched = max(e.touched, in.Touched)
		for _, a := range in.Admissions {
			if _, ok := e.admissions[a.Id]; ok || a.Expires <= now {
				continue
			}
			e.admissions[a.Id] = admission{expires: a.Expires, bulk: a.Bulk, probe: a.Probe, epoch: a.Epoch}
		}
		e.bulk.InFlight = 0
		for _, a := range e.admissions {
			if a.bulk {
				e.bulk.InFlight++
			}
		}
		e.nextExpiry = e.earliest()
	}
	return nil
}
