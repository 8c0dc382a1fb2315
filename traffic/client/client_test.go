package client

import (
	"fmt"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeNode answers checks with a fixed partition hint and epoch, and the
// ring when asked.
type fakeNode struct {
	srv    *httptest.Server
	status int // of checks; 200 when 0
	ring   atomic.Pointer[string]
	checks atomic.Int64
}

func startFakeNode(t *testing.T) *fakeNode {
	t.Helper()
	n := &fakeNode{}
	n.srv = httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if r.Header.Get("Authorization") != "Bearer sk_test" {
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"success":false,"error":"invalid-input-secret"}`))
			return
		}
		switch r.URL.Path {
		case ringPath:
			ring := n.ring.Load()
			if ring == nil {
				w.WriteHeader(503)
				return
			}
			_, _ = w.Write([]byte(*ring))
		case checkPath:
			n.checks.Add(1)
			if n.status != 0 {
				w.WriteHeader(n.status)
				_, _ = w.Write([]byte(`{"success":false,"error":"rate-limiting-unavailable"}`))
				return
			}
			if r.Header.Get(routingHeader) == "1" {
				w.Header().Set(partitionHeader, "7")
				w.Header().Set(epochHeader, "5")
			}
			_, _ = w.Write([]byte(`{"success":true,"allowed":true,"decision":"allow","retry_after_ms":0,"reason_codes":[]}`))
		}
	}))
	t.Cleanup(n.srv.Close)
	return n
}

// ringOwnedBy is a ring of epoch 5 whose every partition is nodes[owner].
func ringOwnedBy(owner int, nodes ...string) string {
	owners := strings.TrimSuffix(strings.Repeat(fmt.Sprint(owner)+",", 1024), ",")
	var ns []string
	for i, u := range nodes {
		ns = append(ns, fmt.Sprintf(`{"id":"n%d","url":%q}`, i, u))
	}
	return fmt.Sprintf(`{"epoch":5,"partitions":1024,"nodes":[%s],"owners":[%s]}`, strings.Join(ns, ","), owners)
}

func mustNewClient(t *testing.T, nodes ...string) *Client {
	t.Helper()
	c, err := New(Config{Nodes: nodes, Secret: "sk_test", Timeout: time.Second, RefreshEvery: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func waitEpoch(t *testing.T, c *Client, want uint64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for c.Epoch() != want {
		if time.Now().After(deadline) {
			t.Fatalf("ring epoch %d, want %d", c.Epoch(), want)
		}
		time.Sleep(time.Millisecond) // polling a background fetch, bounded by the deadline
	}
}

// closedURL is the base of a port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + ln.Addr().String()
	ln.Close()
	return u
}

func TestAKnownRequestGoesToItsOwnerAndFallsBackWhenItFails(t *testing.T) {
	for _, tc := range []struct {
		name  string
		owner func(t *testing.T) (url string, node *fakeNode)
	}{
		{"an owner that cannot be reached", func(t *testing.T) (string, *fakeNode) { return closedURL(t), nil }},
		{"an owner that answers 503", func(t *testing.T) (string, *fakeNode) {
			n := startFakeNode(t)
			n.status = 503
			return n.srv.URL, n
		}},
		{"an owner that answers 421", func(t *testing.T) (string, *fakeNode) {
			n := startFakeNode(t)
			n.status = 421
			return n.srv.URL, n
		}},
		{"an owner that answers", func(t *testing.T) (string, *fakeNode) {
			n := startFakeNode(t)
			return n.srv.URL, n
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seed := startFakeNode(t)
			ownerURL, owner := tc.owner(t)
			ring := ringOwnedBy(1, seed.srv.URL, ownerURL)
			seed.ring.Store(&ring)
			if owner != nil {
				owner.ring.Store(&ring)
			}
			c := mustNewClient(t, seed.srv.URL)
			req := Request{Action: "login", SubjectID: "alice"}
			if d, err := c.Check(req); err != nil || !d.Allowed {
				t.Fatalf("first check: %+v %v", d, err)
			}
			waitEpoch(t, c, 5) // the first answer's epoch made it fetch the ring
			if d, err := c.Check(req); err != nil || !d.Allowed {
				t.Fatalf("second check: %+v %v", d, err)
			}
			st := c.Stats()
			if st.Checks != 2 || st.Routed != 1 {
				t.Fatalf("stats %+v: the second check was not sent to the owner", st)
			}
			healthy := owner != nil && owner.status == 0
			if healthy {
				if st.Retried != 0 || owner.checks.Load() != 1 || seed.checks.Load() != 1 {
					t.Fatalf("stats %+v, owner %d checks, seed %d", st, owner.checks.Load(), seed.checks.Load())
				}
				return
			}
			if st.Retried != 1 || seed.checks.Load() != 2 {
				t.Fatalf("stats %+v, seed %d checks: the failed check was not retried through another node", st, seed.checks.Load())
			}
		})
	}
}

// Without routing, checks go to the nodes in turn and ask for no hint;
// a refusal of the node is the caller's error, not retried.
func TestWithoutRoutingChecksGoInTurnAndErrorsAreTheCallers(t *testing.T) {
	a, b := startFakeNode(t), startFakeNode(t)
	c, err := New(Config{Nodes: []string{a.srv.URL, b.srv.URL}, Secret: "sk_test", NoRouting: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 4 {
		if _, err := c.Check(Request{Action: "login", SubjectID: fmt.Sprint("user-", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if a.checks.Load() != 2 || b.checks.Load() != 2 || c.Stats().Routed != 0 || c.Epoch() != 0 {
		t.Fatalf("checks %d and %d, stats %+v: want them in turn, unrouted", a.checks.Load(), b.checks.Load(), c.Stats())
	}
	bad, err := New(Config{Nodes: []string{a.srv.URL}, Secret: "sk_wrong"})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	_, err = bad.Check(Request{Action: "login"})
	if se, ok := err.(*StatusError); !ok || se.Status != 400 || se.Code != "invalid-input-secret" {
		t.Fatalf("wrong secret: %v", err)
	}
	if bad.Stats().Retried != 0 {
		t.Fatal("a 400 was retried")
	}
}

func TestNewRefusesWhatItCannotUse(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"no node", Config{Secret: "s"}},
		{"no secret", Config{Nodes: []string{"http://127.0.0.1:1"}}},
		{"a node that is not a URL", Config{Nodes: []string{"127.0.0.1:8080"}, Secret: "s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.cfg); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func TestKeysTellRequestsApart(t *testing.T) {
	c := mustNewClient(t, "http://127.0.0.1:1")
	seen := map[Key]Request{}
	for _, r := range []Request{
		{Action: "login"}, {Action: "login", SubjectID: "a"}, {Action: "login", DeviceID: "a"},
		{Action: "logi", SubjectID: "na"}, {Action: "login", SubjectID: "ab", DeviceID: "c"},
		{Action: "login", SubjectID: "a", DeviceID: "bc"}, {Action: "login", Method: "GET"}, {Action: "login", Route: "/a"},
		{Action: "login", ScopeKey: "a"},
	} {
		k := c.Key(&r)
		if other, dup := seen[k]; dup {
			t.Fatalf("%+v and %+v share a key", r, other)
		}
		seen[k] = r
	}
	if c.Key(&Request{Action: "login", Cost: 3}) != c.Key(&Request{Action: "login"}) {
		t.Fatal("the cost changed the key: it does not change the bucket")
	}
}

func TestThePartitionCacheIsBounded(t *testing.T) {
	var s cacheShard
	s.m, s.max = map[Key]int16{}, 8
	for k := range Key(1000) {
		s.put(k, int16(k%1024))
		if len(s.m) > s.max {
			t.Fatalf("%d entries, bound %d", len(s.m), s.max)
		}
	}
	s.put(999, 3) // an entry learnt again takes the new partition
	if p, ok := s.get(999); !ok || p != 3 {
		t.Fatalf("get(999) = %d %v", p, ok)
	}
}
