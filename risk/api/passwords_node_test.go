package api_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/trustd/trustd/node"
	"github.com/trustd/trustd/node/nodetest"
	"github.com/trustd/trustd/risk/passwords"
)

// pwEnv is a node whose SHA-1 corpus is imported from a generated file in
// the downloader's format (breach counts), and whose NTLM corpus is the
// embedded default (rank-derived counts).
type pwEnv struct {
	*nodetest.Node
	siteKey, secret, sandboxSecret, credential, wrongScope string
	counts                                                 map[string]uint32 // password → imported count
}

// testBreachList is the generated SHA-1 corpus of the HTTP tests: a few
// known passwords with distinct counts and filler.
func testBreachList() map[string]uint32 {
	m := map[string]uint32{"password": 3303003, "123456": 37359195, "hunter2": 17043, "correct horse battery staple": 394}
	for i := 0; i < 3000; i++ {
		m[fmt.Sprintf("filler-%d", i)] = uint32(i + 1)
	}
	return m
}

// writeDownloaderFile writes list as one file of HASH:COUNT lines sorted by
// hash, CRLF, as the Pwned Passwords downloader's single-file output.
func writeDownloaderFile(t testing.TB, path string, mode passwords.Mode, list map[string]uint32) {
	t.Helper()
	var lines []string
	for pw, c := range list {
		lines = append(lines, fmt.Sprintf("%s:%d", mode.Hash(pw).Hex(mode), c))
	}
	sort.Strings(lines)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\r\n")+"\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func startPasswordEnv(t *testing.T, mutate ...func(*node.Config)) *pwEnv {
	t.Helper()
	dir := t.TempDir()
	list := testBreachList()
	src := filepath.Join(t.TempDir(), "pwnedpasswords.txt")
	writeDownloaderFile(t, src, passwords.SHA1, list)
	if _, err := passwords.Import(src, dir, passwords.ImportOptions{Mode: passwords.SHA1, Source: "test breach file"}); err != nil {
		t.Fatal(err)
	}
	e := startPasswordEnvDir(t, dir, mutate...)
	e.counts = list
	return e
}

// startPasswordEnvDir starts a node serving the corpus files in dir, with
// a workspace, sites and credentials.
func startPasswordEnvDir(t *testing.T, dir string, mutate ...func(*node.Config)) *pwEnv {
	t.Helper()
	tn := nodetest.Start(t, append([]func(*node.Config){func(c *node.Config) { c.PasswordsDir = dir }}, mutate...)...)
	var ws struct {
		WorkspaceID string `json:"workspace_id"`
	}
	tn.MustCreate("/workspaces", map[string]any{"name": "pw"}, &ws)
	p := "/workspaces/" + ws.WorkspaceID
	var site, sbx struct {
		SiteKey string `json:"site_key"`
		Secret  string `json:"secret"`
	}
	tn.MustCreate(p+"/sites", map[string]any{"name": "prod", "hostnames": []string{"shop.example"}, "environment": "production"}, &site)
	tn.MustCreate(p+"/sites", map[string]any{"name": "sbx", "hostnames": []string{"localhost"}, "environment": "sandbox"}, &sbx)
	var cred, other struct {
		Credential string `json:"credential"`
	}
	tn.MustCreate(p+"/credentials", map[string]any{"name": "sv", "scopes": []string{"site.verify"}}, &cred)
	tn.MustCreate(p+"/credentials", map[string]any{"name": "id", "scopes": []string{"identity.document.verify"}}, &other)
	return &pwEnv{Node: tn, siteKey: site.SiteKey, secret: site.Secret, sandboxSecret: sbx.Secret,
		credential: cred.Credential, wrongScope: other.Credential}
}

type rangeAnswer struct {
	Success  bool   `json:"success"`
	Prefix   string `json:"prefix"`
	Mode     string `json:"mode"`
	Suffixes []struct {
		Suffix string `json:"suffix"`
		Count  uint32 `json:"count"`
	} `json:"suffixes"`
	Corpus passwords.Corpus `json:"corpus"`
}

func (a rangeAnswer) count(suffix string) (uint32, bool) {
	for _, s := range a.Suffixes {
		if s.Suffix == suffix {
			return s.Count, true
		}
	}
	return 0, false
}

func TestAccountPasswordRangeErrors(t *testing.T) {
	e := startPasswordEnv(t, func(c *node.Config) { c.MaxBodyBytes = 4096 })
	cases := []struct {
		name, bearer string
		body         any
		headers      []string
		status       int
		code         string
	}{
		{"no credential at all is unauthorized", "", map[string]any{"prefix": "5BAA6"}, nil, 401, "unauthorized"},
		{"an unknown bearer credential is unauthorized", "cred_nope", map[string]any{"prefix": "5BAA6"}, nil, 401, "unauthorized"},
		{"a credential without site.verify is forbidden", e.wrongScope, map[string]any{"prefix": "5BAA6"}, nil, 403, "forbidden"},
		{"an unknown body secret is unauthorized", "", map[string]any{"secret": "nope", "prefix": "5BAA6"}, nil, 401, "unauthorized"},
		{"a sandbox secret is refused at this production endpoint", "", map[string]any{"secret": e.sandboxSecret, "prefix": "5BAA6"}, nil, 401, "unauthorized"},
		{"a prefix of 4 characters is invalid", e.credential, map[string]any{"prefix": "5BAA"}, nil, 400, "invalid-prefix"},
		{"a prefix of 6 characters is invalid (it would tell more)", e.credential, map[string]any{"prefix": "5BAA61"}, nil, 400, "invalid-prefix"},
		{"a non-hex prefix is invalid", e.credential, map[string]any{"prefix": "5BAG6"}, nil, 400, "invalid-prefix"},
		{"a missing prefix is invalid", e.credential, map[string]any{}, nil, 400, "invalid-prefix"},
		{"an unknown mode is invalid", e.credential, map[string]any{"prefix": "5BAA6", "mode": "md5"}, nil, 400, "invalid-mode"},
		{"a prefix of the wrong type is an invalid field", e.credential, map[string]any{"prefix": 12345}, nil, 400, "invalid-field"},
		{"an unknown member is refused", e.credential, map[string]any{"prefix": "5BAA6", "Prefix": "00000"}, nil, 400, "unknown-field"},
		{"broken JSON is refused", e.credential, `{"prefix":`, nil, 400, "malformed-json"},
		{"a form body is an unsupported media type", e.credential, "prefix=5BAA6", []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "unsupported-media-type"},
		{"an oversized body is refused", e.credential, `{"prefix":"5BAA6","secret":"` + strings.Repeat("a", 5000) + `"}`, nil, 413, "body-too-large"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.Do("POST", "/v1/account/password/range", tc.bearer, tc.body, tc.headers...)
			if r.Status != tc.status || r.ErrorCode(t) != tc.code {
				t.Fatalf("got %d %s, want %d %s", r.Status, r.Body, tc.status, tc.code)
			}
		})
	}
	t.Run("GET on the POST path is 405 with Allow", func(t *testing.T) {
		r := e.Do("GET", "/v1/account/password/range", "", nil)
		if r.Status != 405 || r.Header.Get("Allow") != "POST" {
			t.Fatalf("got %d Allow=%q", r.Status, r.Header.Get("Allow"))
		}
	})
}

func TestAccountPasswordRangeAnswers(t *testing.T) {
	e := startPasswordEnv(t)
	sha := passwords.SHA1.Hash("password").Hex(passwords.SHA1)
	ntlm := passwords.NTLM.Hash("password").Hex(passwords.NTLM)
	if sha != "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8" || ntlm != "8846F7EAEE8FB117AD06BDD830B7586C" {
		t.Fatalf("known answers: sha1 %s ntlm %s", sha, ntlm)
	}
	post := func(t *testing.T, bearer string, body map[string]any) rangeAnswer {
		t.Helper()
		r := e.Do("POST", "/v1/account/password/range", bearer, body)
		if r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		var a rangeAnswer
		r.Decode(t, &a)
		return a
	}
	t.Run("the legacy body secret finds password with its imported breach count", func(t *testing.T) {
		a := post(t, "", map[string]any{"secret": e.secret, "prefix": "5BAA6"})
		c, ok := a.count(sha[5:])
		if !a.Success || a.Prefix != "5BAA6" || a.Mode != "sha1" || !ok || c != 3303003 {
			t.Fatalf("answer %+v", a)
		}
		if a.Corpus.CountSemantics != "breach" || a.Corpus.Embedded || a.Corpus.Source != "test breach file" || a.Corpus.Hashes != uint64(len(e.counts)) {
			t.Fatalf("corpus %+v", a.Corpus)
		}
		for i, s := range a.Suffixes {
			if len(s.Suffix) != 35 || strings.ToUpper(s.Suffix) != s.Suffix || s.Count == 0 || (i > 0 && s.Suffix <= a.Suffixes[i-1].Suffix) {
				t.Fatalf("suffix %d %+v is not an uppercase 35-character real entry in order", i, s)
			}
		}
	})
	t.Run("a scoped credential and a lowercase prefix give the same range, uppercased", func(t *testing.T) {
		a := post(t, e.credential, map[string]any{"prefix": "5baa6"})
		if c, ok := a.count(sha[5:]); a.Prefix != "5BAA6" || !ok || c != 3303003 {
			t.Fatalf("answer %+v", a)
		}
	})
	t.Run("an empty range is an empty list, not an error", func(t *testing.T) {
		// Find a prefix no test password has.
		used := map[string]bool{}
		for pw := range e.counts {
			used[passwords.SHA1.Hash(pw).Hex(passwords.SHA1)[:5]] = true
		}
		empty := "00000"
		for p := uint32(0); used[empty]; p++ {
			empty = passwords.FormatPrefix(p)
		}
		a := post(t, e.credential, map[string]any{"prefix": empty})
		if !a.Success || len(a.Suffixes) != 0 {
			t.Fatalf("answer %+v", a)
		}
	})
	t.Run("padding fills 800 to 1000 entries with count 0, keeping the real ones", func(t *testing.T) {
		a := post(t, e.credential, map[string]any{"prefix": "5BAA6", "add_padding": true})
		if n := len(a.Suffixes); n < 800 || n > 1000 {
			t.Fatalf("%d entries", n)
		}
		real := 0
		for i, s := range a.Suffixes {
			if s.Count > 0 {
				real++
			}
			if i > 0 && s.Suffix <= a.Suffixes[i-1].Suffix {
				t.Fatal("padded answer not in suffix order")
			}
		}
		if c, ok := a.count(sha[5:]); !ok || c != 3303003 || real < 1 {
			t.Fatalf("real entries lost: %d", real)
		}
	})
	t.Run("ntlm comes from the embedded default, which says its counts are rank-derived", func(t *testing.T) {
		a := post(t, e.credential, map[string]any{"prefix": ntlm[:5], "mode": "ntlm"})
		c, ok := a.count(ntlm[5:])
		if a.Mode != "ntlm" || !ok || c == 0 || !a.Corpus.Embedded || a.Corpus.CountSemantics != "rank" ||
			!strings.Contains(a.Corpus.Description, "NOT the number of times") || !strings.Contains(a.Corpus.Source, "MIT") {
			t.Fatalf("answer %+v", a)
		}
		if len(a.Suffixes[0].Suffix) != 27 {
			t.Fatalf("ntlm suffix %q", a.Suffixes[0].Suffix)
		}
	})
}

func TestPasswordRangeCompat(t *testing.T) {
	e := startPasswordEnv(t)
	sha := passwords.SHA1.Hash("password").Hex(passwords.SHA1)
	ntlm := passwords.NTLM.Hash("password").Hex(passwords.NTLM)
	base := "/v1/passwords/" + e.siteKey + "/range/"
	lines := func(t *testing.T, r nodetest.Response) map[string]string {
		t.Helper()
		if r.Status != 200 || r.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Fatalf("%d %s %s", r.Status, r.Header.Get("Content-Type"), r.Body)
		}
		if bytes.HasSuffix(r.Body, []byte("\r\n")) || bytes.Contains(bytes.ReplaceAll(r.Body, []byte("\r\n"), nil), []byte("\n")) {
			t.Fatalf("lines must be separated by CRLF only, none trailing: %q", r.Body)
		}
		out := map[string]string{}
		for _, l := range strings.Split(string(r.Body), "\r\n") {
			suf, cnt, ok := strings.Cut(l, ":")
			if !ok || strings.ToUpper(suf) != suf {
				t.Fatalf("line %q", l)
			}
			out[suf] = cnt
		}
		return out
	}
	t.Run("sha1 answers SUFFIX:COUNT lines with the breach count and says what counts mean", func(t *testing.T) {
		r := e.Do("GET", base+"5BAA6", "", nil)
		m := lines(t, r)
		if m[sha[5:]] != "3303003" || r.Header.Get("X-Service-Password-Counts") != "breach" || r.Header.Get("X-Service-Password-Corpus") != "imported" {
			t.Fatalf("got %q, headers %v", m[sha[5:]], r.Header)
		}
		for s := range m {
			if len(s) != 35 {
				t.Fatalf("suffix %q", s)
			}
		}
	})
	t.Run("mode=sha1 and a lowercase prefix are accepted as HIBP does", func(t *testing.T) {
		if m := lines(t, e.Do("GET", base+"5baa6?mode=sha1", "", nil)); m[sha[5:]] != "3303003" {
			t.Fatal("lowercase prefix")
		}
	})
	t.Run("Add-Padding: true pads with count-0 lines", func(t *testing.T) {
		m := lines(t, e.Do("GET", base+"5BAA6", "", nil, "Add-Padding", "true"))
		zero := 0
		for _, c := range m {
			if c == "0" {
				zero++
			}
		}
		if len(m) < 800 || len(m) > 1000 || zero < len(m)-10 || m[sha[5:]] != "3303003" {
			t.Fatalf("%d lines, %d padding", len(m), zero)
		}
	})
	t.Run("mode=ntlm answers 27-character suffixes from the rank-counted default", func(t *testing.T) {
		r := e.Do("GET", base+ntlm[:5]+"?mode=ntlm", "", nil)
		m := lines(t, r)
		if m[ntlm[5:]] == "" || r.Header.Get("X-Service-Password-Counts") != "rank" || r.Header.Get("X-Service-Password-Corpus") != "embedded" {
			t.Fatalf("ntlm %v %v", m[ntlm[5:]], r.Header)
		}
		for s := range m {
			if len(s) != 27 {
				t.Fatalf("suffix %q", s)
			}
		}
	})
	t.Run("the legacy base serves it too, with the deprecation headers", func(t *testing.T) {
		r := e.Do("GET", "/passwords/"+e.siteKey+"/range/5BAA6", "", nil)
		if m := lines(t, r); m[sha[5:]] != "3303003" || r.Header.Get("Deprecation") != "true" {
			t.Fatal("legacy")
		}
	})
	errs := []struct {
		name, path string
		status     int
		code       string
	}{
		{"a short prefix is 400", base + "5BAA", 400, "invalid-prefix"},
		{"a long prefix is 400", base + "5BAA61", 400, "invalid-prefix"},
		{"a non-hex prefix is 400", base + "ZZZZZ", 400, "invalid-prefix"},
		{"an unknown mode is 400", base + "5BAA6?mode=md5", 400, "invalid-mode"},
		{"an unknown site key is 404", "/v1/passwords/not-a-site-key/range/5BAA6", 404, "not-found"},
		{"a bad prefix of an unknown site key is still 404 (the key is checked first)", "/v1/passwords/nope/range/x", 404, "not-found"},
	}
	for _, tc := range errs {
		t.Run(tc.name, func(t *testing.T) {
			r := e.Do("GET", tc.path, "", nil)
			if r.Status != tc.status || r.ErrorCode(t) != tc.code {
				t.Fatalf("got %d %s", r.Status, r.Body)
			}
		})
	}
	t.Run("POST on the GET path is 405", func(t *testing.T) {
		if r := e.Do("POST", base+"5BAA6", "", nil); r.Status != 405 || !strings.Contains(r.Header.Get("Allow"), "GET") {
			t.Fatalf("got %d Allow=%q", r.Status, r.Header.Get("Allow"))
		}
	})
	t.Run("CORS names only the site's own hostnames", func(t *testing.T) {
		r := e.Do("GET", base+"5BAA6", "", nil, "Origin", "https://shop.example")
		if r.Status != 200 || r.Header.Get("Access-Control-Allow-Origin") != "https://shop.example" {
			t.Fatalf("allowed origin: %d %v", r.Status, r.Header)
		}
		r = e.Do("GET", base+"5BAA6", "", nil, "Origin", "https://evil.example")
		if r.Status != 200 || r.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Fatalf("foreign origin got CORS: %v", r.Header)
		}
	})
	t.Run("the preflight allows Add-Padding for the site's origin only", func(t *testing.T) {
		r := e.Do("OPTIONS", base+"5BAA6", "", nil, "Origin", "https://shop.example", "Access-Control-Request-Method", "GET",
			"Access-Control-Request-Headers", "add-padding")
		if r.Status != 204 || r.Header.Get("Access-Control-Allow-Origin") != "https://shop.example" ||
			r.Header.Get("Access-Control-Allow-Headers") != "Add-Padding" || !strings.Contains(r.Header.Get("Access-Control-Allow-Methods"), "GET") {
			t.Fatalf("preflight %d %v", r.Status, r.Header)
		}
		if r := e.Do("OPTIONS", base+"5BAA6", "", nil, "Origin", "https://evil.example"); r.Status != 403 || r.ErrorCode(t) != "invalid-origin" {
			t.Fatalf("foreign preflight %d %s", r.Status, r.Body)
		}
		if r := e.Do("OPTIONS", base+"5BAA6", "", nil); r.Status != 403 || r.ErrorCode(t) != "invalid-origin" {
			t.Fatalf("preflight without Origin %d %s", r.Status, r.Body)
		}
		if r := e.Do("OPTIONS", "/v1/passwords/nope/range/5BAA6", "", nil, "Origin", "https://shop.example"); r.Status != 404 {
			t.Fatalf("unknown key preflight %d", r.Status)
		}
	})
}

func TestPasswordRangeCompatIsLimitedPerIP(t *testing.T) {
	// The ingress limit runs before the handler, so even unknown site keys
	// (404) spend the caller's budget: enumeration is limited too.
	tn := nodetest.Start(t, func(c *node.Config) { c.IngressIPRate = 3 })
	tn.Do("GET", "/v1/", "", nil) // loads the contract validator while there is budget
	var last nodetest.Response
	for i := 0; i < 30; i++ {
		last = tn.Do("GET", "/v1/passwords/some-key/range/5BAA6", "", nil)
		if last.Status == 429 {
			break
		}
	}
	if last.Status != 429 || last.ErrorCode(t) != "rate-limit-exceeded" || last.Header.Get("Retry-After") == "" {
		t.Fatalf("never limited: %d %s", last.Status, last.Body)
	}
}

func TestNodeRefusesACorruptPasswordCorpus(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "sha1.pwd"), bytes.Repeat([]byte("x"), 9<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := node.Start(ctx, node.Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", FastRaft: true, PasswordsDir: dir})
	if err == nil {
		_ = n.Close(ctx)
		t.Fatal("a node started with a corrupt corpus file")
	}
	if !strings.Contains(err.Error(), "corrupt corpus") {
		t.Fatalf("error %v does not say the corpus is corrupt", err)
	}
}

// TestPasswordRangeAnswers503WhenTheCorpusCannotBeRead: a record moved out
// of its range passes the cheap checks at start (only Verify reads every
// record) and is refused when its range is read: both operations answer
// 503 service-unavailable rather than serving it.
func TestPasswordRangeAnswers503WhenTheCorpusCannotBeRead(t *testing.T) {
	dir := t.TempDir()
	if err := passwords.BuildFromList(dir, passwords.SHA1, []string{"password"},
		passwords.Corpus{Source: "t", CountSemantics: passwords.CountsPresence}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "sha1.pwd")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-22] ^= 0x80 // the only record's prefix nibble
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	e := startPasswordEnvDir(t, dir)
	if r := e.Do("POST", "/v1/account/password/range", e.credential, map[string]any{"prefix": "5BAA6"}); r.Status != 503 || r.ErrorCode(t) != "service-unavailable" {
		t.Fatalf("POST: %d %s", r.Status, r.Body)
	}
	if r := e.Do("GET", "/v1/passwords/"+e.siteKey+"/range/5BAA6", "", nil); r.Status != 503 || r.ErrorCode(t) != "service-unavailable" {
		t.Fatalf("GET: %d %s", r.Status, r.Body)
	}
	// Other ranges of the same file still answer.
	if r := e.Do("GET", "/v1/passwords/"+e.siteKey+"/range/00000", "", nil); r.Status != 200 {
		t.Fatalf("another range: %d %s", r.Status, r.Body)
	}
}
