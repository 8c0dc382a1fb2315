package http

import "testing"

func TestPagesOwnAPrefixOrOneExactPath(t *testing.T) {
	console := &Pages{Prefix: "/console/"}
	icon := &Pages{Prefix: "/favicon.ico"}
	for _, c := range []struct {
		p    *Pages
		path string
		want bool
	}{
		{console, "/console/", true},
		{console, "/console", true},
		{console, "/console/workspaces", true},
		{console, "/consoles", false},
		{icon, "/favicon.ico", true},
		{icon, "/favicon.ico/x", false},
		{icon, "/favicon.icon", false},
		{icon, "/favicon", false},
	} {
		if got := c.p.owns(c.path); got != c.want {
			t.Errorf("Pages{%q}.owns(%q) = %v, want %v", c.p.Prefix, c.path, got, c.want)
		}
	}
}
