package http

import "testing"

func TestDecisionOfReadsTheTaggedField(t *testing.T) {
	type tagged struct {
		Success  bool   `json:"success"`
		Decision string `json:"decision"`
	}
	type withOptions struct {
		Decision string `json:"decision,omitempty"`
	}
	type other struct {
		Decision string `json:"verdict"`
	}
	type notString struct {
		Decision int `json:"decision"`
	}
	for _, tc := range []struct {
		name string
		v    any
		want string
		ok   bool
	}{
		{"a pointer to a struct", &tagged{Decision: "block"}, "block", true},
		{"a struct value", tagged{Decision: "allow"}, "allow", true},
		{"a tag with options", &withOptions{Decision: "delay"}, "delay", true},
		{"another tag", &other{Decision: "allow"}, "", false},
		{"not a string", &notString{Decision: 1}, "", false},
		{"a nil pointer", (*tagged)(nil), "", false},
		{"not a struct", []string{"allow"}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, ok := decisionOf(tc.v); got != tc.want || ok != tc.ok {
				t.Fatalf("got %q %v, want %q %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestDecidedKeepsTheSetBounded(t *testing.T) {
	var c Call
	for name, want := range map[string]string{"allow": "allow", "approval_required": "approval_required", "": "other", "anything-else": "other"} {
		c.decided(name)
		if got := outcomeNames[c.outcome]; got != want {
			t.Fatalf("%q counted as %q, want %q", name, got, want)
		}
	}
	if outcomeNames[outcomeSuccess] != "success" || outcomeNames[outcomeFailure] != "failure" {
		t.Fatal("siteverify outcomes")
	}
	// An area resolves its outcomes once (OutcomeOf) and sets them on the
	// hot path (SetOutcome): the same bounded set.
	for name, want := range map[string]string{"allow": "allow", "reject": "reject", "": "other", "anything-else": "other"} {
		c.SetOutcome(OutcomeOf(name))
		if got := outcomeNames[c.outcome]; got != want {
			t.Fatalf("OutcomeOf(%q) counted as %q, want %q", name, got, want)
		}
	}
}
