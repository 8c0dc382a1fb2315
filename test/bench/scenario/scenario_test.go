package scenario

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/trustd/trustd/test/bench/baseline/server"
	"github.com/trustd/trustd/test/bench/challenge"
	"github.com/trustd/trustd/test/bench/internal/faketrustd"
	"github.com/trustd/trustd/test/bench/keys"
	"github.com/trustd/trustd/test/bench/load"
	"github.com/trustd/trustd/test/bench/provision"
)

func mustTargets(t *testing.T, bases ...string) *Targets {
	t.Helper()
	tg, err := NewTargets(bases, 4, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

func mustChooser(t *testing.T, n int) *keys.Chooser {
	t.Helper()
	c, err := keys.New(keys.Spec{N: n}, 1)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustEnv(t *testing.T, fake *faketrustd.Server, policies ...provision.PolicySpec) *provision.Env {
	t.Helper()
	a, err := provision.NewAdmin(fake.URL, fake.Token)
	if err != nil {
		t.Fatal(err)
	}
	env, err := a.Setup(context.Background(), policies)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func TestNewTargetsRejectsBadURLs(t *testing.T) {
	for _, b := range []string{"127.0.0.1:8080", "ftp://x", "http://"} {
		if _, err := NewTargets([]string{b}, 1, time.Second); !errors.Is(err, ErrBadTarget) {
			t.Errorf("%q: want ErrBadTarget, got %v", b, err)
		}
	}
}

func TestRateLimitAgainstTheBaseline(t *testing.T) {
	url, stop, err := server.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	w := NewRateLimit(0, mustTargets(t, url), "", CheckBodies(10), mustChooser(t, 10))
	if o := w.Do(); o.Kind != load.OK || o.Decision != load.Allow {
		t.Fatalf("outcome %+v", o)
	}
	if raceEnabled {
		return
	}
	// The baseline runs in this process, so this counts both sides.
	if allocs := testing.AllocsPerRun(200, func() { w.Do() }); allocs > 0 {
		t.Fatalf("a check allocates %.1f times on the client", allocs)
	}
}

func TestRateLimitSeesThrottlingAndStatus(t *testing.T) {
	fake := faketrustd.Start(t, "adm")
	env := mustEnv(t, fake, provision.BenchPolicy("subject", 3))
	tg := mustTargets(t, fake.URL, fake.URL) // two "nodes", same server
	w := NewRateLimit(0, tg, env.Site.Secret, CheckBodies(1), mustChooser(t, 1))
	var got []load.Decision
	for range 5 {
		got = append(got, w.Do().Decision)
	}
	want := []load.Decision{load.Allow, load.Allow, load.Allow, load.Throttle, load.Throttle}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("decisions %v want %v", got, want)
		}
	}
	bad := NewRateLimit(0, tg, "wrong-secret", CheckBodies(1), mustChooser(t, 1))
	if o := bad.Do(); o.Kind != load.Status || o.Status != 401 {
		t.Fatalf("a wrong secret gave %+v, want a 401 status error", o)
	}
	down := NewRateLimit(0, mustTargets(t, "http://127.0.0.1:1"), "", CheckBodies(1), mustChooser(t, 1))
	if o := down.Do(); o.Kind != load.Transport {
		t.Fatalf("a closed port gave %+v, want a transport error", o)
	}
}

func TestSiteverifyUsesEachTokenOnce(t *testing.T) {
	fake := faketrustd.Start(t, "adm")
	env := mustEnv(t, fake)
	m := challenge.NewMinter(fake.URL, "http://"+provision.BenchHost, env.Site.SiteKey, 2)
	toks, err := challenge.MintMany(context.Background(), m, 3, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	toks = append(toks, toks[0]) // a replay must fail
	tokens := NewTokens(env.Site.Secret, toks)
	w := NewSiteverify(1, mustTargets(t, fake.URL), tokens)
	want := []load.Decision{load.VerifySuccess, load.VerifySuccess, load.VerifySuccess, load.VerifyFailure}
	for i, d := range want {
		if o := w.Do(); o.Decision != d || o.Op != 1 {
			t.Fatalf("token %d: %+v, want %v", i, o, d)
		}
	}
	if o := w.Do(); o.Kind != load.Exhausted {
		t.Fatalf("after the last token: %+v, want Exhausted", o)
	}
	if tokens.Used() != 4 {
		t.Fatalf("used %d", tokens.Used())
	}
}

func TestParseMix(t *testing.T) {
	tests := []struct {
		name, spec string
		ok         bool
	}{
		{"two known weights parse", "ratelimit=80,siteverify=20", true},
		{"an unknown name is refused", "ratelimit=80,login=20", false},
		{"a missing weight is refused", "ratelimit", false},
		{"all-zero weights are refused", "ratelimit=0", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseMix(tt.spec, "ratelimit", "siteverify")
			if (err == nil) != tt.ok {
				t.Fatalf("err %v", err)
			}
		})
	}
}

type constWorker load.Outcome

func (c constWorker) Do() load.Outcome { return load.Outcome(c) }

func TestMixFollowsTheWeights(t *testing.T) {
	ws, _ := ParseMix("a=80,b=20", "a", "b")
	m := NewMix(ws, []load.Worker{constWorker{Op: 0}, constWorker{Op: 1}}, mustChooser(t, 1).Rand())
	var n [2]int
	for range 10000 {
		n[m.Do().Op]++
	}
	if n[1] < 1700 || n[1] > 2300 {
		t.Fatalf("op b ran %d of 10000 times, want about 2000", n[1])
	}
}
