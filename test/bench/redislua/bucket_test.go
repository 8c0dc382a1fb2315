package redislua

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/trustd/trustd/test/bench/keys"
	"github.com/trustd/trustd/test/bench/load"
	"github.com/trustd/trustd/test/bench/resp"
)

// mustStartRedis starts a throwaway redis-server, or skips the test when the
// binary is absent; the server is stopped when the test ends.
func mustStartRedis(t *testing.T) (*Server, *resp.Conn, string) {
	t.Helper()
	if _, err := Binary(); errors.Is(err, ErrNoServer) {
		t.Skip("redis-server not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	s, err := Start(ctx)
	if err != nil {
		t.Fatalf("start redis: %v", err)
	}
	t.Cleanup(s.Stop)
	c, err := resp.Dial(s.Addr(), 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	sha, err := Load(c)
	if err != nil {
		t.Fatal(err)
	}
	return s, c, sha
}

// model is the reference token bucket the script must match.
type model struct {
	tokens, ts int64
	seen       bool
}

func (m *model) take(b Bucket, now int64) (bool, int64) {
	iv := int64(b.RefillInterval / time.Microsecond)
	if !m.seen {
		m.tokens, m.ts, m.seen = b.Capacity, now, true
	}
	if now > m.ts {
		if n := (now - m.ts) / iv; n > 0 {
			m.tokens += n * b.RefillAmount
			m.ts += n * iv
		}
	}
	if m.tokens >= b.Capacity {
		m.tokens, m.ts = b.Capacity, now
	}
	if b.Cost <= m.tokens {
		m.tokens -= b.Cost
		return true, m.tokens
	}
	return false, m.tokens
}

func TestScriptMatchesTheReferenceModel(t *testing.T) {
	_, c, sha := mustStartRedis(t)
	rng := rand.New(rand.NewPCG(1, 2))
	now := time.Now().UnixMicro() // a real 16-digit µs timestamp
	for trial := range 20 {
		b := Bucket{
			Capacity:       1 + rng.Int64N(20),
			RefillAmount:   1 + rng.Int64N(5),
			RefillInterval: time.Duration(1+rng.Int64N(1000)) * time.Millisecond,
			Cost:           rng.Int64N(4),
		}
		key := "model:" + strconv.Itoa(trial)
		var m model
		for step := range 200 {
			now += rng.Int64N(int64(b.RefillInterval/time.Microsecond) * 2)
			wantOK, wantLeft := m.take(b, now)
			gotOK, gotLeft, err := Take(c, sha, key, b, now)
			if err != nil {
				t.Fatal(err)
			}
			if gotOK != wantOK || gotLeft != wantLeft {
				t.Fatalf("trial %d step %d bucket %+v: script (%v,%d) model (%v,%d)", trial, step, b, gotOK, gotLeft, wantOK, wantLeft)
			}
		}
	}
}

func TestScriptThrottlesAnEmptyBucketAndRefills(t *testing.T) {
	_, c, sha := mustStartRedis(t)
	b := Bucket{Capacity: 3, RefillAmount: 1, RefillInterval: 20 * time.Millisecond, Cost: 1}
	for i := range 3 {
		if ok, _, err := Take(c, sha, "live", b, 0); err != nil || !ok {
			t.Fatalf("request %d of a full bucket refused (%v)", i, err)
		}
	}
	if ok, left, err := Take(c, sha, "live", b, 0); err != nil || ok || left != 0 {
		t.Fatalf("fourth request: allowed=%v left=%d err=%v, want throttled", ok, left, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		ok, _, err := Take(c, sha, "live", b, 0)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the bucket never refilled using the server clock")
		}
		time.Sleep(5 * time.Millisecond) // poll interval, bounded by the deadline
	}
	v, err := c.Do("PTTL", "live")
	if err != nil || v.Int <= 0 || v.Int > 100 {
		t.Fatalf("key TTL %d ms (%v), want the time to refill, a few tens of ms", v.Int, err)
	}
}

func TestPreEncodedCommandsMatchTheGenericEncoder(t *testing.T) {
	b := Bucket{Capacity: 10, RefillAmount: 2, RefillInterval: time.Second, Cost: 1}
	sha := "0123456789012345678901234567890123456789"
	cmds := Commands(100, sha, b)
	var buf []byte
	for _, k := range []int{0, 7, 99} {
		want := string(Command(nil, sha, "bench:"+strconv.Itoa(k), b, 0))
		if got := string(cmds.Get(&buf, k)); got != want {
			t.Fatalf("key %d: got %q want %q", k, got, want)
		}
	}
}

func TestWorkerRunsTheScript(t *testing.T) {
	s, _, sha := mustStartRedis(t)
	b := Bucket{Capacity: 5, RefillAmount: 1, RefillInterval: time.Hour, Cost: 1}
	ch, err := keys.New(keys.Spec{N: 1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWorker(s.Addr(), Commands(1, sha, b), ch, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var allowed, throttled int
	for range 8 {
		switch o := w.Do(); {
		case o.Kind != load.OK:
			t.Fatalf("outcome %+v", o)
		case o.Decision == load.Allow:
			allowed++
		case o.Decision == load.Throttle:
			throttled++
		}
	}
	if allowed != 5 || throttled != 3 {
		t.Fatalf("allowed %d throttled %d, want 5 and 3", allowed, throttled)
	}
}
