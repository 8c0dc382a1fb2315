package api

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/valyala/fasthttp"

	"github.com/trustd/trustd/platform/cluster"
)

// get runs one GET through the server's handler in memory.
func (f *fixture) get(ctx *fasthttp.RequestCtx, path, bearer string) {
	ctx.Request.Reset()
	ctx.Response.Reset()
	ctx.Request.Header.SetMethod("GET")
	ctx.Request.SetRequestURI(path)
	if bearer != "" {
		ctx.Request.Header.Set("Authorization", "Bearer "+bearer)
	}
	f.s.Handler()(ctx)
}

func mustDecodeRing(t *testing.T, ctx *fasthttp.RequestCtx) RateLimitRing {
	t.Helper()
	if ctx.Response.StatusCode() != 200 {
		t.Fatalf("ring: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	var r RateLimitRing
	if err := json.Unmarshal(ctx.Response.Body(), &r); err != nil {
		t.Fatalf("ring: %v: %s", err, ctx.Response.Body())
	}
	return r
}

// The ring answers every partition's owner under the router's current
// ring, is encoded once per epoch, and follows the router to a new epoch.
func TestTheRingAnswersEveryPartitionsOwnerAndFollowsTheEpoch(t *testing.T) {
	f := mustNewFixture(t)
	var ctx fasthttp.RequestCtx
	f.get(&ctx, "/v1/rate-limit/ring", f.secret)
	r := mustDecodeRing(t, &ctx)
	if r.Epoch != f.router.Ring().Epoch || r.Partitions != cluster.Partitions || len(r.Owners) != cluster.Partitions ||
		len(r.Nodes) != 1 || r.Nodes[0].ID != "n1" {
		t.Fatalf("single node ring: %+v", r.Nodes)
	}
	first := bytes.Clone(ctx.Response.Body())
	f.get(&ctx, "/v1/rate-limit/ring", f.secret)
	if !bytes.Equal(first, ctx.Response.Body()) {
		t.Fatal("the same epoch answered two different rings")
	}

	members := []cluster.Member{{ID: "n1", APIAddr: "127.0.0.1:8081"}, {ID: "n2", APIAddr: "10.0.0.2:8080"}, {ID: "n3", APIAddr: "https://n3.example"}}
	next := cluster.NewRing(r.Epoch+5, members, "n1")
	f.router.SetRing(next)
	f.get(&ctx, "/v1/rate-limit/ring", f.secret)
	r = mustDecodeRing(t, &ctx)
	if r.Epoch != next.Epoch || len(r.Nodes) != 3 {
		t.Fatalf("after the ring moved: epoch %d, %d nodes", r.Epoch, len(r.Nodes))
	}
	for i, want := range []string{"http://127.0.0.1:8081", "http://10.0.0.2:8080", "https://n3.example"} {
		if r.Nodes[i].ID != members[i].ID || r.Nodes[i].URL != want {
			t.Errorf("node %d = %+v, want %s at %s", i, r.Nodes[i], members[i].ID, want)
		}
	}
	share := map[int]int{}
	for p, o := range r.Owners {
		if o != next.Owner(p) {
			t.Fatalf("partition %d: owner %d, the ring says %d", p, o, next.Owner(p))
		}
		share[o]++
	}
	if len(share) != 3 {
		t.Fatalf("owners spread over %d members: %v", len(share), share)
	}
}

// The ring is authenticated as the check is, with the check's
// {success:false,error} refusals.
func TestTheRingRefusesWhatTheCheckRefuses(t *testing.T) {
	f := mustNewFixture(t)
	var ctx fasthttp.RequestCtx
	for _, tc := range []struct {
		name, bearer, want string
		status             int
	}{
		{"no secret", "", "missing-input-secret", 400},
		{"an unknown secret", "sk_live_nope", "invalid-input-secret", 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.get(&ctx, "/v1/rate-limit/ring", tc.bearer)
			if got := string(ctx.Response.Body()); ctx.Response.StatusCode() != tc.status || got != `{"success":false,"error":"`+tc.want+`"}` {
				t.Fatalf("%d %s", ctx.Response.StatusCode(), got)
			}
		})
	}
}

// A check asked for routing carries the partition of its bucket and the
// ring epoch; one not asked carries neither.
func TestTheCheckHintsItsPartitionOnlyWhenAsked(t *testing.T) {
	f := mustNewFixture(t, testPolicy("aaaaaaaa-0000-4000-8000-000000000001", "login", "subject", 1000))
	var ctx fasthttp.RequestCtx
	partition := func(subject string, routed bool) (string, string) {
		t.Helper()
		body := `{"action":"login","subject_id":"` + subject + `"}`
		if routed {
			f.callRouted(&ctx, "/v1/rate-limit/check", f.secret, body)
		} else {
			f.call(&ctx, "/v1/rate-limit/check", f.secret, body)
		}
		if ctx.Response.StatusCode() != 200 {
			t.Fatalf("%d %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
		return string(ctx.Response.Header.Peek(PartitionHeader)), string(ctx.Response.Header.Peek(EpochHeader))
	}
	if p, e := partition("alice", false); p != "" || e != "" {
		t.Fatalf("a check without %s answered partition %q epoch %q", RoutingHeader, p, e)
	}
	seen := map[string]bool{}
	for i := range 200 {
		subject := "user-" + strconv.Itoa(i)
		p, e := partition(subject, true)
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n >= cluster.Partitions {
			t.Fatalf("partition %q", p)
		}
		if e != strconv.FormatUint(f.router.Ring().Epoch, 10) {
			t.Fatalf("epoch %q, the ring's is %d", e, f.router.Ring().Epoch)
		}
		if again, _ := partition(subject, true); again != p {
			t.Fatalf("%s: partition %s then %s", subject, p, again)
		}
		seen[p] = true
	}
	// 200 keys over 1024 partitions land on ~180 distinct ones: the hint
	// is the key's partition, not a constant.
	if len(seen) < 150 {
		t.Fatalf("200 subjects hinted only %d partitions", len(seen))
	}
	// No policy matched: no bucket, no partition, but the epoch.
	f.callRouted(&ctx, "/v1/rate-limit/check", f.secret, `{"action":"search"}`)
	if ctx.Response.StatusCode() != 200 || len(ctx.Response.Header.Peek(PartitionHeader)) != 0 || len(ctx.Response.Header.Peek(EpochHeader)) == 0 {
		t.Fatalf("unmatched check: %d partition %q epoch %q", ctx.Response.StatusCode(), ctx.Response.Header.Peek(PartitionHeader), ctx.Response.Header.Peek(EpochHeader))
	}
}

// BenchmarkRoutingHeaderLookup is what the routing hint costs a check that
// does not ask for it: one lookup among a check's usual headers.
func BenchmarkRoutingHeaderLookup(b *testing.B) {
	var req fasthttp.Request
	req.Header.SetMethod("POST")
	req.SetRequestURI("/v1/rate-limit/check")
	req.Header.SetContentType("application/json")
	req.Header.Set("Authorization", "Bearer sk_live_0123456789abcdef0123456789abcdef")
	req.Header.Set("User-Agent", "shop-backend/1.0")
	req.Header.Set("X-Request-Id", "corr-42")
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if wantsRoutingHint(&req.Header) {
			n++
		}
	}
	if n != 0 {
		b.Fatal("found a header that is not there")
	}
}
