package etag

import "testing"

func TestMatches(t *testing.T) {
	for _, tc := range []struct {
		header string
		tags   []string
		want   bool
	}{
		{`"a"`, []string{`"a"`}, true},
		{`W/"a"`, []string{`"a"`}, true},
		{`"x", "b"`, []string{`"a"`, `"b"`}, true},
		{`*`, []string{`"a"`}, true},
		{`"b"`, []string{`"a"`}, false},
		{``, []string{`"a"`}, false},
		{`,`, []string{``}, false},
		{`"a"`, nil, false},
	} {
		if got := Matches(tc.header, tc.tags...); got != tc.want {
			t.Errorf("Matches(%q, %q) = %v, want %v", tc.header, tc.tags, got, tc.want)
		}
	}
}
