package jsonstrict

import "testing"

func TestFindName(t *testing.T) {
	is := func(want string) func(string) bool { return func(n string) bool { return n == want } }
	cases := []struct {
		body  string
		deep  bool
		match string
		found string
	}{
		{`{"a":1,"Score":2}`, false, "score", "Score"},
		{`{"a":{"score":1}}`, false, "score", ""}, // nested: top level only
		{`{"a":{"score":1}}`, true, "score", "score"},
		{`{"a":[{"x":{"score":1}}]}`, true, "score", "score"},
		{`{"a":"score"}`, true, "score", ""}, // a value, not a name
		{`["score"]`, true, "score", ""},
		{`{"a":`, true, "score", ""}, // malformed: no match
		{`{"a":1} {"score":1}`, false, "score", ""},
	}
	for _, c := range cases {
		name, ok := FindName([]byte(c.body), c.deep, is(c.match))
		if name != c.found || ok != (c.found != "") {
			t.Errorf("%s deep=%v: %q %v, want %q", c.body, c.deep, name, ok, c.found)
		}
	}
}
