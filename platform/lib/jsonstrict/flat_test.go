package jsonstrict

import (
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

func TestFlatObjectAcceptsWhatStrictJSONAccepts(t *testing.T) {
	tests := []struct {
		name string
		body string
		ok   bool
	}{
		{"an empty object", `{}`, true},
		{"whitespace around everything", " \t\n{ \"a\" : \"b\" , \"n\" : -1.5e+3 }\r\n", true},
		{"escapes in strings", `{"a":"\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"}`, true},
		{"booleans and null", `{"a":true,"b":false,"c":null}`, true},
		{"a leading zero", `{"a":01}`, false},
		{"a bare minus", `{"a":-}`, false},
		{"a dangling fraction", `{"a":1.}`, false},
		{"NaN", `{"a":NaN}`, false},
		{"single quotes", `{'a':1}`, false},
		{"a trailing comma", `{"a":1,}`, false},
		{"a raw control character in a string", "{\"a\":\"x\ty\"}", false},
		{"an unknown escape", `{"a":"\x"}`, false},
		{"a truncated literal", `{"a":tru}`, false},
		{"an array", `[]`, false},
		{"two objects", `{}{}`, false},
		{"nothing", ``, false},
	}
	var o Flat
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := o.Scan([]byte(tc.body))
			if (err == nil) != tc.ok {
				t.Fatalf("scan(%q) = %v, want ok=%v", tc.body, err, tc.ok)
			}
			if tc.ok {
				var v map[string]any
				if err := json.Unmarshal([]byte(tc.body), &v); err != nil {
					t.Fatalf("the reference decoder refuses what the scanner accepted: %v", err)
				}
			}
		})
	}
	if err := o.Scan([]byte(`{"a":"\u00e9\ud83d\ude00"}`)); err != nil || string(o.members[0].val) != "é😀" {
		t.Fatalf("unescape: %v %q", err, o.members[0].val)
	}
}

func FuzzFlatObject(f *testing.F) {
	for _, s := range []string{`{"action":"a","cost":3}`, `{"a":"\u00e9"}`, `{"a":[1]}`, "{\"a\":\"\xff\"}", `{"a":1e5}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var o Flat
		if o.Scan(body) != nil {
			return
		}
		// The reference checks syntax only: a number past float64's
		// range ({"a":1e700}) is valid JSON, and the fields' own parsers
		// refuse it (the check answers invalid-cost).
		var v map[string]jsontext.Value
		if err := json.Unmarshal(body, &v, json.RejectUnknownMembers(false)); err != nil {
			// The scanner may accept duplicate names (the handler refuses
			// them); anything else it accepts must be valid JSON.
			if !strings.Contains(err.Error(), "duplicate") {
				t.Fatalf("scanner accepted %q, reference refuses: %v", body, err)
			}
		}
	})
}
