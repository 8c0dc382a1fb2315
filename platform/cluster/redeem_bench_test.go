package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/actors"
)

// BenchmarkReplicatedRedeemFirstUse is a first use through its owner:
// the owner applies it, the replica confirms it (one round trip), the
// owner settles on it (one local op).
func BenchmarkReplicatedRedeemFirstUse(b *testing.B) {
	p := mustNewPair(b)
	exp := time.Now().Add(time.Minute).UnixNano()
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		key := fmt.Sprintf("tok/%d", i)
		op := &actors.Redeem{ID: key, Expires: exp, Key: "k", Outcome: actors.Outcome{Ref: "r"}}
		// asked through the owner so the only round trip is the replica's
		if err := p.ownerOf(key).Ask(key, op); err != nil || !op.First {
			b.Fatal(err)
		}
	}
}

func (p *pair) ownerOf(key string) *Router {
	r := p.a.Ring()
	if r.Members[r.Owner(Partition(key))].ID == "a" {
		return p.a
	}
	return p.b
}
