package ratelimit

import (
	"strings"
	"testing"
)

// The benchmarks cover every function on the rate-limit check path; each
// must report 0 allocs/op.

var (
	sinkBool  bool
	sinkInt   int64
	sinkHash  [32]byte
	sinkDec   Decision
	benchTime = utc(2025, 3, 9, 10, 41, 0, 0)
)

func BenchmarkBucketTake(b *testing.B) {
	cfg := BucketConfig{Capacity: 1000, RefillAmount: 10, RefillInterval: MinRefillInterval}
	bk := NewBucket(cfg, benchTime)
	now := benchTime
	for b.Loop() {
		now += 100_000 // 0.1ms: refills every tenth call, takes drain it
		sinkBool, sinkInt, _ = bk.Take(cfg, now, 2)
	}
}

func BenchmarkBucketTakeRefused(b *testing.B) {
	bk := Bucket{Tokens: 0, Last: benchTime}
	for b.Loop() {
		sinkBool, _, sinkInt = bk.Take(testCfg, benchTime+sec/2, 5)
	}
}

func BenchmarkBucketFull(b *testing.B) {
	bk := Bucket{Tokens: 3, Last: benchTime}
	for b.Loop() {
		sinkBool = bk.Full(testCfg, benchTime+7*sec)
	}
}

func BenchmarkQuotaTakeMinute(b *testing.B) {
	var q Quota
	now := benchTime
	for b.Loop() {
		now += sec / 10
		sinkBool, sinkInt, _ = q.Take(1_000, Minute, now, 1)
	}
}

func BenchmarkQuotaTakeMonth(b *testing.B) {
	var q Quota
	now := benchTime
	for b.Loop() {
		now += sec
		sinkBool, sinkInt, _ = q.Take(1_000_000, Month, now, 1)
	}
}

func BenchmarkWindowEndMonth(b *testing.B) {
	for b.Loop() {
		sinkInt = WindowEnd(Month, benchTime)
	}
}

func BenchmarkMatchActionWildcard(b *testing.B) {
	for b.Loop() {
		sinkBool = MatchAction("payment.*", "payment.card.refund")
	}
}

func BenchmarkValidAction(b *testing.B) {
	for b.Loop() {
		sinkBool = ValidAction("payment.card.refund")
	}
}

func BenchmarkMatchMethod(b *testing.B) {
	for b.Loop() {
		sinkBool = MatchMethod("post", "POST")
	}
}

func BenchmarkStricter(b *testing.B) {
	d := Throttle
	for b.Loop() {
		sinkDec = Stricter(d, sinkDec)
	}
}

var benchKey = []byte("0123456789abcdef0123456789abcdef")

// BenchmarkHashScope is the cost of keeping a scope value only as a hash:
// four SHA-256 blocks for a value under 56 bytes.
func BenchmarkHashScope(b *testing.B) {
	for b.Loop() {
		sinkHash = HashScope(benchKey, "subject-7f3c2a91")
	}
}

func BenchmarkHashScopeLongRoute(b *testing.B) {
	route := "/" + strings.Repeat("segment/", 128) // 1 KiB
	for b.Loop() {
		sinkHash = HashScope(benchKey, route)
	}
}

// BenchmarkHashScopeCryptoHMAC is the baseline HashScope replaces.
func BenchmarkHashScopeCryptoHMAC(b *testing.B) {
	for b.Loop() {
		sinkHash = stdHMAC(benchKey, "subject-7f3c2a91")
	}
}
