package ratelimit

import (
	"errors"
	"testing"
)

func TestStricter(t *testing.T) {
	tests := []struct {
		name string
		a, b Decision
		want Decision
	}{
		{"allow and allow stay allow", Allow, Allow, Allow},
		{"throttle beats allow", Allow, Throttle, Throttle},
		{"throttle beats allow in either order", Throttle, Allow, Throttle},
		{"reject beats throttle", Throttle, Reject, Reject},
		{"reject beats allow", Reject, Allow, Reject},
		{"an unknown value counts as reject", Decision(200), Allow, Reject},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Stricter(tt.a, tt.b); got != tt.want {
				t.Errorf("Stricter(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

func TestParseDecision(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Decision
		err  error
	}{
		{"allow parses", "allow", Allow, nil},
		{"throttle parses", "throttle", Throttle, nil},
		{"reject parses", "reject", Reject, nil},
		{"an unknown name fails closed as reject", "deny", Reject, ErrDecision},
		{"a capitalised name is refused", "Allow", Reject, ErrDecision},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseDecision(tt.in)
			if got != tt.want || !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("ParseDecision(%q) = (%v, %v), want (%v, %v)", tt.in, got, err, tt.want, tt.err)
			}
			if err == nil && got.String() != tt.in {
				t.Errorf("String() = %q, want %q", got.String(), tt.in)
			}
		})
	}
}
