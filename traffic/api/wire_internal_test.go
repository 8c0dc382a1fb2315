package api

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/catalog"
)

var updateCheckWire = flag.Bool("update-check-wire", false, "rewrite testdata/check_wire.golden from the current answers")

// The rate-limit check's answers, byte for byte as a client reads them off
// the socket: status line, every header with its name's case, its value
// and its place, and the body. Only what changes from run to run is
// masked: the Date header, the decision id and the milliseconds to wait
// (the seconds are pinned). Anything the hot path's speed work changes in
// the answer shows here.
func TestCheckAnswersOnTheWireStayByteForByte(t *testing.T) {
	f := mustNewFixture(t, testPolicy("bbbbbbbb-0000-4000-8000-000000000001", "payment.*", "subject", 1))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- f.s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = f.s.Shutdown(ctx)
		<-done
	})
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rd := bufio.NewReader(conn)

	const check = "/v1/rate-limit/check"
	bearer := "Authorization: Bearer " + f.secret + "\r\n"
	cases := []struct{ name, method, path, headers, body string }{
		{"allowed", "POST", check, bearer, `{"action":"payment.card","subject_id":"u1"}`},
		{"limited", "POST", check, bearer, `{"action":"payment.card","subject_id":"u1"}`},
		{"no policy matches", "POST", check, bearer, `{"action":"login","subject_id":"u1"}`},
		{"secret in the body", "POST", check, "", `{"secret":"` + f.secret + `","action":"payment.card","subject_id":"u2"}`},
		{"legacy path", "POST", "/rate-limit/check", bearer, `{"action":"payment.card","subject_id":"u3"}`},
		{"missing secret", "POST", check, "", `{"action":"a"}`},
		{"invalid secret", "POST", check, "Authorization: Bearer sk_live_nope\r\n", `{"action":"a"}`},
		{"two different secrets", "POST", check, bearer, `{"secret":"sk_live_other","action":"a"}`},
		{"unknown field", "POST", check, bearer, `{"action":"a","platform":"android"}`},
		{"duplicate field", "POST", check, bearer, `{"action":"a","action":"b"}`},
		{"malformed json", "POST", check, bearer, `{"action":`},
		{"invalid cost", "POST", check, bearer, `{"action":"a","cost":"3"}`},
		{"negative cost", "POST", check, bearer, `{"action":"a","cost":-1}`},
		{"missing action", "POST", check, bearer, `{"subject_id":"u1"}`},
		{"invalid action type", "POST", check, bearer, `{"action":7}`},
		{"invalid method", "POST", check, bearer, `{"action":"a","method":"FETCH IT"}`},
		{"mobile without app identity", "POST", "/v1/mobile/rate-limit/check", bearer, `{"action":"a"}`},
		{"body too large", "POST", check, bearer, `{"action":"` + strings.Repeat("a", 2<<20) + `"}`},
		{"method not allowed", "GET", check, bearer, ``},
		{"routing hint asked, the header name in lower case", "POST", check, bearer + "x-trustd-routing: 1\r\n", `{"action":"payment.card","subject_id":"u5"}`},
		{"routing header not 1", "POST", check, bearer + "X-Trustd-Routing: yes\r\n", `{"action":"payment.card","subject_id":"u6"}`},
		{"caller's request id kept", "POST", check, bearer + "X-Request-Id: corr-7\r\n", `{"action":"payment.card","subject_id":"u4"}`},
		{"unavailable before the catalog", "POST", check, bearer, `{"action":"a"}`},
	}
	var got strings.Builder
	for i, tc := range cases {
		if tc.name == "unavailable before the catalog" {
			f.store.setCatalog(catalog.Empty())
		}
		hdr := tc.headers
		if !strings.Contains(hdr, "X-Request-Id") {
			hdr += "X-Request-Id: wire-" + strconv.Itoa(i) + "\r\n"
		}
		// The server answers an oversized body from its Content-Length
		// alone and closes: sending all 2 MiB raced with that close (the
		// write failed with ECONNRESET), so only a prefix is sent.
		body := tc.body[:min(len(tc.body), 64<<10)]
		req := tc.method + " " + tc.path + " HTTP/1.1\r\nHost: trustd.test\r\nContent-Type: application/json\r\n" + hdr +
			"Content-Length: " + strconv.Itoa(len(tc.body)) + "\r\n\r\n" + body
		if _, err := conn.Write([]byte(req)); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		raw, closed := readRawResponse(t, rd)
		fmt.Fprintf(&got, "=== %s\n%s\n", tc.name, maskWire(raw))
		if closed {
			if conn, err = net.Dial("tcp", ln.Addr().String()); err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			rd = bufio.NewReader(conn)
		}
	}
	const golden = "testdata/check_wire.golden"
	if *updateCheckWire {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (write it with -update-check-wire)", err)
	}
	if got.String() != string(want) {
		t.Fatalf("the check's answers changed on the wire (rewrite %s with -update-check-wire only for a deliberate change):\n%s",
			golden, firstDifference(string(want), got.String()))
	}
}

// readRawResponse reads one response's bytes as sent (the head up to the
// blank line, then Content-Length bytes of body) and says whether the
// server closes the connection after it.
func readRawResponse(t *testing.T, rd *bufio.Reader) (string, bool) {
	t.Helper()
	var b strings.Builder
	length, closed := 0, false
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the head: %v (read %q)", err, b.String())
		}
		b.WriteString(line)
		if line == "\r\n" {
			break
		}
		name, val, _ := strings.Cut(strings.TrimRight(line, "\r\n"), ": ")
		switch strings.ToLower(name) {
		case "content-length":
			if length, err = strconv.Atoi(val); err != nil {
				t.Fatalf("Content-Length %q", val)
			}
		case "connection":
			closed = val == "close"
		}
	}
	body := make([]byte, length)
	if _, err := ioReadFull(rd, body); err != nil {
		t.Fatalf("reading the body: %v", err)
	}
	b.Write(body)
	return b.String(), closed
}

func ioReadFull(rd *bufio.Reader, p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := rd.Read(p[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

var (
	wireDate       = regexp.MustCompile(`(?m)^Date: [^\r]*\r$`)
	wireDecisionID = regexp.MustCompile(`"decision_id":"[0-9a-f-]{36}"`)
	wireRetryMs    = regexp.MustCompile(`"retry_after_ms":[1-9][0-9]*`)
	wireContentLen = regexp.MustCompile(`(?m)^Content-Length: [0-9]+\r$`)
)

// maskWire blanks what differs between runs; a masked value keeps its
// place and the shape the pattern checks. The Content-Length of an answer
// whose masked retry milliseconds vary in width is masked too; its
// body's length is pinned by the body itself.
func maskWire(raw string) string {
	raw = wireDate.ReplaceAllString(raw, "Date: <date>\r")
	raw = wireDecisionID.ReplaceAllString(raw, `"decision_id":"<uuid>"`)
	if wireRetryMs.MatchString(raw) {
		raw = wireRetryMs.ReplaceAllString(raw, `"retry_after_ms":<ms>`)
		raw = wireContentLen.ReplaceAllString(raw, "Content-Length: <n>\r")
	}
	return strings.ReplaceAll(raw, "\r\n", "\\r\\n\n")
}

// firstDifference shows where two texts part, with a little context.
func firstDifference(want, got string) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	from := max(i-200, 0)
	return fmt.Sprintf("at byte %d\nwant …%s\ngot  …%s", i, want[from:min(i+200, len(want))], got[from:min(i+200, len(got))])
}
