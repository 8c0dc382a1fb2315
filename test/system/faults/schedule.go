package faults

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Fault is a kind of fault a schedule injects.
type Fault string

// Faults. A "target" is picked when the schedule runs: an owner is any
// node (every node owns some of the keys the clients use: several
// subjects per constraint and policy spread over the ring), the leader is
// the Raft leader at injection.
const (
	// PartitionOne cuts one node off from the other nodes and from the
	// clients.
	PartitionOne Fault = "partition-one"
	// PartitionLeader cuts the Raft leader off from the other nodes; the
	// clients still reach both sides.
	PartitionLeader Fault = "partition-leader"
	// TwoVersusOne cuts one node off from the other two; the clients
	// still reach both sides.
	TwoVersusOne Fault = "two-versus-one"
	// Isolated cuts every node off from every other (1-versus-1-versus-1);
	// the clients reach all three.
	Isolated Fault = "one-versus-one-versus-one"
	// Flaky drops a random share of one node's packets to and from the
	// other nodes.
	Flaky Fault = "flaky-link"
	// KillOwner kills one node with SIGKILL and restarts it with the same
	// data dir at heal.
	KillOwner Fault = "kill-owner"
	// KillLeader kills the Raft leader likewise.
	KillLeader Fault = "kill-leader"
	// PauseOwner stops one node with SIGSTOP and continues it at heal.
	PauseOwner Fault = "pause-owner"
	// PauseLeader pauses the Raft leader likewise.
	PauseLeader Fault = "pause-leader"
	// Rejoin kills one node with SIGKILL and restarts it at once with its
	// data dir, before the others have declared it dead.
	Rejoin Fault = "rejoin"
)

// AllFaults lists every kind, in the order the generator cycles them.
var AllFaults = []Fault{PartitionOne, PartitionLeader, TwoVersusOne, Isolated, Flaky, KillOwner, KillLeader, PauseOwner, PauseLeader, Rejoin}

// NeedsNetwork reports whether a fault needs network namespaces.
func (f Fault) NeedsNetwork() bool {
	switch f {
	case PartitionOne, PartitionLeader, TwoVersusOne, Isolated, Flaky:
		return true
	}
	return false
}

// OnLeader reports whether the fault targets the Raft leader.
func (f Fault) OnLeader() bool { return f == PartitionLeader || f == KillLeader || f == PauseLeader }

// Schedule is one fault episode: clients run for Warmup, the fault lasts
// For, then it heals and the clients go on for Settle.
type Schedule struct {
	Seed   uint64
	Index  int
	Fault  Fault
	Target int // index into the cluster's nodes when the fault is not on the leader
	Warmup time.Duration
	For    time.Duration
	Settle time.Duration
	Drop   float64 // Flaky: probability of dropping a packet
}

func (s Schedule) String() string {
	d := ""
	if s.Fault == Flaky {
		d = fmt.Sprintf(" drop=%.2f", s.Drop)
	}
	return fmt.Sprintf("seed=%d #%d %s target=%d warmup=%v for=%v settle=%v%s", s.Seed, s.Index, s.Fault, s.Target, s.Warmup, s.For, s.Settle, d)
}

// Generate returns n schedules drawn from seed over kinds: the kinds are
// cycled in an order shuffled per round, so n ≥ k·len(kinds) gives each
// kind at least k schedules; targets, durations and drop rates are random.
// The same seed gives the same schedules.
func Generate(seed uint64, n int, kinds []Fault, nodes int) []Schedule {
	r := rand.New(rand.NewPCG(seed, 0x5eed_fa17))
	out := make([]Schedule, 0, n)
	var round []Fault
	for i := 0; i < n; i++ {
		if len(round) == 0 {
			round = append([]Fault(nil), kinds...)
			r.Shuffle(len(round), func(a, b int) { round[a], round[b] = round[b], round[a] })
		}
		f := round[0]
		round = round[1:]
		s := Schedule{Seed: seed, Index: i, Fault: f, Target: r.IntN(nodes),
			Warmup: time.Duration(1500+r.IntN(1500)) * time.Millisecond,
			For:    time.Duration(2000+r.IntN(6000)) * time.Millisecond,
			Settle: 3 * time.Second}
		switch f {
		case PartitionOne, PartitionLeader, TwoVersusOne, Isolated:
			// Up to 20 s: well past the liveness TTL (4 s) and its fence
			// (issue 23), and long enough for memberlist to declare the
			// other side dead.
			s.For = time.Duration(3000+r.IntN(17000)) * time.Millisecond
		case Flaky:
			s.Drop = 0.1 + float64(r.IntN(30))/100
			s.For = time.Duration(4000+r.IntN(11000)) * time.Millisecond
		case Rejoin:
			s.For = time.Duration(200+r.IntN(800)) * time.Millisecond
		}
		out = append(out, s)
	}
	return out
}
