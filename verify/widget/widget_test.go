package widget

import (
	"bytes"
	"compress/gzip"
	"io"
	"strings"
	"testing"
)

func TestAssetReplies(t *testing.T) {
	a, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(a.JS.Body, []byte(a.CSS.Version)) || bytes.Contains(a.JS.Body, []byte(cssVersionMark)) {
		t.Fatal("the script does not carry the stylesheet's version")
	}
	js := a.JS
	etag, gzTag := `"`+js.Version+`"`, `"`+js.Version+`-gz"`
	tests := []struct {
		name        string
		gz          bool
		v, inm      string
		notModified bool
		cache, tag  string
	}{
		{"the plain URL has the short cache", false, "", "", false, CacheShort, etag},
		{"the current version is immutable", false, js.Version, "", false, CacheImmutable, etag},
		{"a stale version has the short cache", false, "0000000000000000", "", false, CacheShort, etag},
		{"gzip has its own tag", true, "", "", false, CacheShort, gzTag},
		{"a listed current tag is not modified", false, "", `"x", ` + etag, true, CacheShort, etag},
		{"a weak tag of the other encoding is not modified", false, "", `W/` + gzTag, true, CacheShort, etag},
		{"a star is not modified", true, "", "*", true, CacheShort, gzTag},
		{"an old tag gets the file", false, "", `"0000000000000000"`, false, CacheShort, etag},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := js.Reply(tc.gz, tc.v, tc.inm)
			if r.NotModified != tc.notModified || r.CacheControl != tc.cache || r.ETag != tc.tag || r.Gzip != tc.gz {
				t.Fatalf("%+v", r)
			}
			if tc.notModified != (r.Body == nil) {
				t.Fatalf("body %d bytes on not-modified=%v", len(r.Body), r.NotModified)
			}
		})
	}
	zr, err := gzip.NewReader(bytes.NewReader(js.Reply(true, "", "").Body))
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := io.ReadAll(zr)
	if !bytes.Equal(plain, js.Body) {
		t.Fatal("the gzip body is not the script")
	}
}

func TestDemoChecksFollowSpec72(t *testing.T) {
	allow := func(h string) bool { return h == "localhost" }
	ok := `{"success":true,"hostname":"localhost","action":"login","score":0.9,"score_threshold":0.5,"score_enforced":false,"error-codes":[]}`
	if r := NewDemoResult("ann", 200, []byte(ok), allow); !r.Accepted || len(r.Checks) != 7 || !strings.Contains(r.JSON, "\n  ") {
		t.Fatalf("%+v", r)
	}
	for _, bad := range []struct {
		status int
		body   string
	}{
		{503, ok},
		{200, `not json`},
		{200, strings.Replace(ok, `"hostname":"localhost"`, `"hostname":"evil.example"`, 1)},
		{200, strings.Replace(ok, `"action":"login"`, `"action":"pay"`, 1)},
		{200, strings.Replace(ok, `"score":0.9`, `"score":0.1`, 1)},
		{200, strings.Replace(ok, `"error-codes":[]`, `"error-codes":["low-score"]`, 1)},
	} {
		if r := NewDemoResult("ann", bad.status, []byte(bad.body), allow); r.Accepted {
			t.Fatalf("accepted %d %s", bad.status, bad.body)
		}
	}
	if p := NewDemoPage("/s.js", "k", "dark", "xx", ""); p.Theme != "dark" || p.Language != "en" || p.Size != "normal" || len(p.Nonce) != 24 {
		t.Fatalf("%+v", p)
	}
}
