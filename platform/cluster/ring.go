package cluster

import (
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
)

// Partitions is the fixed number of partitions keys hash into. It never
// changes for the life of a cluster, so a key's partition is stable across
// every process and version.
const Partitions = 1024

// Partition returns the partition of key. xxhash is the same in every
// process (unlike hash/maphash), which routing across nodes depends on.
func Partition(key string) int {
	return int(xxhash.Sum64String(key) % Partitions)
}

// Member is one node as the ring sees it.
type Member struct {
	ID string
	// Epoch is the member's liveness epoch in the replicated membership
	// (catalog.NodeRecord): a node restarted or fenced comes back under a
	// new one.
	Epoch    uint64
	APIAddr  string
	PeerAddr string
	RaftAddr string
}

// Ring is an immutable placement of partitions on members. A new Ring with
// a higher Epoch replaces it atomically whenever membership changes.
type Ring struct {
	Epoch   uint64
	Members []Member
	Self    int // index of this node in Members, or -1
	owner   [Partitions]int16
	replica [Partitions]int16 // -1 when there is no second member
	// held marks the partitions this node may decide for under this ring:
	// it owns them, and every node that could still decide for them under
	// an older ring has provably stopped (platform/cluster/hold.go). Bits only go
	// from 0 to 1 during a ring's life.
	held [Partitions / 64]atomic.Uint64
}

// NewRing places every partition on the member with the highest
// rendezvous score, and its replica on the runner-up: the node that would
// own it if the owner disappeared, so a replica never moves when an
// unrelated node leaves.
func NewRing(epoch uint64, members []Member, selfID string) *Ring {
	r := &Ring{Epoch: epoch, Members: append([]Member(nil), members...), Self: -1}
	seeds := make([]uint64, len(members))
	for i, m := range members {
		seeds[i] = xxhash.Sum64String(m.ID)
		if m.ID == selfID {
			r.Self = i
		}
	}
	for p := 0; p < Partitions; p++ {
		best, second := -1, -1
		var bestScore, secondScore uint64
		for i := range members {
			s := score(seeds[i], uint64(p))
			switch {
			case best < 0 || s > bestScore:
				second, secondScore = best, bestScore
				best, bestScore = i, s
			case second < 0 || s > secondScore:
				second, secondScore = i, s
			}
		}
		r.owner[p] = int16(best)
		r.replica[p] = int16(second)
	}
	return r
}

// score mixes a member seed with a partition number (splitmix64 finaliser),
// the rendezvous weight of that member for that partition.
func score(seed, p uint64) uint64 {
	z := seed ^ (p * 0x9e3779b97f4a7c15)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Held reports whether this node may decide for partition p under r.
func (r *Ring) Held(p int) bool { return r.held[p>>6].Load()&(1<<(p&63)) != 0 }

// hold marks partition p held.
func (r *Ring) hold(p int) { r.held[p>>6].Or(1 << (p & 63)) }

// holdAll marks every partition this node owns held: a ring no other node
// can have decided under (a single node, or tests' fixed rings).
func (r *Ring) holdAll() *Ring {
	for p := 0; p < Partitions; p++ {
		if r.OwnsLocally(p) {
			r.hold(p)
		}
	}
	return r
}

// HeldAll reports whether this node holds every partition it owns.
func (r *Ring) HeldAll() bool {
	for p := 0; p < Partitions; p++ {
		if r.OwnsLocally(p) && !r.Held(p) {
			return false
		}
	}
	return true
}

// Owner returns the index in Members of the node owning partition p, or -1
// for an empty ring.
func (r *Ring) Owner(p int) int { return int(r.owner[p]) }

// Replica returns the index of partition p's replica, or -1.
func (r *Ring) Replica(p int) int { return int(r.replica[p]) }

// OwnsLocally reports whether this node owns partition p.
func (r *Ring) OwnsLocally(p int) bool { return r.Self >= 0 && int(r.owner[p]) == r.Self }

// Share returns how many partitions each member owns, by member ID.
func (r *Ring) Share() map[string]int {
	out := make(map[string]int, len(r.Members))
	for p := 0; p < Partitions; p++ {
		if o := r.owner[p]; o >= 0 {
			out[r.Members[o].ID]++
		}
	}
	return out
}
