package http

import (
	"testing"
)

type fuzzBody struct {
	Name    string            `json:"name"`
	Count   int               `json:"count"`
	Ratio   float64           `json:"ratio"`
	On      *bool             `json:"on"`
	Tags    []string          `json:"tags"`
	Nested  struct{ A int }   `json:"nested"`
	Labels  map[string]string `json:"labels"`
	Hosts   []string          `json:"hostnames"`
	Opaque  []byte            `json:"opaque"`
	Pointer *fuzzBody         `json:"pointer"`
}

func TestDecodeStrictRefusesAmbiguousBodies(t *testing.T) {
	tests := []struct {
		name string
		body string
		code string
	}{
		{"a plain object decodes", `{"name":"a","count":1}`, ""},
		{"a duplicate key is refused", `{"name":"a","name":"b"}`, "malformed-json"},
		{"a key matching only case-insensitively is refused", `{"Name":"a"}`, "unknown-field"},
		{"trailing data after the object is refused", `{"name":"a"} {}`, "malformed-json"},
		{"invalid UTF-8 is refused", "{\"name\":\"\xff\"}", "malformed-json"},
		{"an unknown member is refused", `{"nope":1}`, "unknown-field"},
		{"a wrong type is refused", `{"count":"1"}`, "invalid-field"},
		{"an empty body is refused", ``, "malformed-json"},
		{"an array is not an object", `[1]`, "malformed-json"},
		{"truncated JSON is refused", `{"name":`, "malformed-json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var v fuzzBody
			err := DecodeStrict([]byte(tc.body), &v)
			got := ""
			if de, ok := err.(*decodeError); ok {
				got = de.Code.Code
			} else if err != nil {
				got = "other:" + err.Error()
			}
			if got != tc.code {
				t.Fatalf("code = %q, want %q (err %v)", got, tc.code, err)
			}
		})
	}
}

func FuzzDecodeStrict(f *testing.F) {
	for _, s := range []string{`{"name":"a","count":1,"tags":["x"]}`, `{"a":1,"a":2}`, `{"pointer":{"pointer":{}}}`, "{\"name\":\"\xff\"}", `[]`, `{"ratio":1e400}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v fuzzBody
		err := DecodeStrict(b, &v)
		if err == nil {
			return
		}
		switch err.(type) {
		case *decodeError, *fieldError:
		default:
			t.Fatalf("unclassified error %T: %v", err, err)
		}
	})
}
