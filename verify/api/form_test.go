package api

import (
	"github.com/trustd/trustd/platform/lib/jsonstrict"
	"strings"
	"testing"
)

// The siteverify JSON body goes through the one strict scanner
// (jsonstrict.Flat.ScanKnown): known members are strings or null (absent),
// unknown members may hold any JSON value and are ignored, and the body is
// still one valid JSON object.
func TestSiteverifyJSONBodies(t *testing.T) {
	deep := strings.Repeat("[", 34) + strings.Repeat("]", 34)
	tests := []struct {
		name     string
		body     string
		ok       bool
		response string
	}{
		{"known string members are read", `{"secret":"s","response":"r"}`, true, "r"},
		{"an unknown nested member is ignored", `{"response":"r","x":[1,{"a":null,"b":[true,false,-0.5e+3]}]}`, true, "r"},
		{"a null known member is absent", `{"response":null,"response":"r"}`, true, "r"},
		{"escapes are decoded", `{"response":"a\u005fb\n"}`, true, "a_b"},
		{"a surrogate pair is one character", `{"response":"\ud83d\ude00"}`, true, "\U0001F600"},
		{"surrounding spaces are trimmed", `{"response":"  r "}`, true, "r"},
		{"many unknown members are fine", `{` + strings.Repeat(`"u":1,`, 40) + `"response":"r"}`, true, "r"},
		{"a known member sent twice is refused", `{"response":"a","response":"b"}`, false, ""},
		{"a known member of another type is refused", `{"response":1}`, false, ""},
		{"a lone surrogate is refused", `{"response":"\ud83d"}`, false, ""},
		{"a lone surrogate in an unknown member is refused", `{"x":"\udc00"}`, false, ""},
		{"invalid UTF-8 is refused", "{\"x\":\"\xff\"}", false, ""},
		{"trailing data is refused", `{"response":"r"} x`, false, ""},
		{"a trailing comma is refused", `{"response":"r",}`, false, ""},
		{"a leading zero is refused", `{"x":01}`, false, ""},
		{"nesting beyond 33 levels is refused", `{"x":` + deep + `}`, false, ""},
		{"nesting of 33 levels is fine", `{"x":` + strings.Repeat("[", 33) + strings.Repeat("]", 33) + `}`, true, ""},
		{"an unterminated array is refused", `{"x":[1,2}`, false, ""},
		{"an array body is refused", `["response"]`, false, ""},
		{"an empty body is refused", ``, false, ""},
		{"an empty object is fine", ` {} `, true, ""},
	}
	var obj jsonstrict.Flat
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var q svRequest
			ok := parseJSONBody(&obj, []byte(tc.body), &q)
			if ok != tc.ok || (ok && string(q.Response) != tc.response) {
				t.Fatalf("ok %v response %q, want %v %q", ok, q.Response, tc.ok, tc.response)
			}
		})
	}
}

func TestSiteverifyJSONBodyAllocatesNothing(t *testing.T) {
	body := []byte(`{"secret":"sk_live_x","response":"tok\u005f1","remoteip":"203.0.113.7","extra":{"a":[1,2,3]}}`)
	var obj jsonstrict.Flat
	allocs := testing.AllocsPerRun(100, func() {
		var q svRequest
		if !parseJSONBody(&obj, body, &q) {
			t.Fatal("refused")
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per body", allocs)
	}
}
