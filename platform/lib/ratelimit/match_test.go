package ratelimit

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestMatchAction(t *testing.T) {
	tests := []struct {
		name, pattern, action string
		want                  bool
	}{
		{"a star matches any action", "*", "otp.send", true},
		{"an exact name matches itself", "otp.send", "otp.send", true},
		{"an exact name does not match a longer action", "otp.send", "otp.send.sms", false},
		{"an exact name matches regardless of letter case", "OTP.Send", "otp.SEND", true},
		{"a prefix wildcard matches a child", "payment.*", "payment.card", true},
		{"a prefix wildcard matches a grandchild", "payment.*", "payment.card.refund", true},
		{"a prefix wildcard does not match the prefix itself", "payment.*", "payment", false},
		{"a prefix wildcard does not match a longer sibling name", "payment.*", "paymentx", false},
		{"a prefix wildcard does not match a name sharing only letters", "payment.*", "paymentx.card", false},
		{"a prefix wildcard does not match an empty child", "payment.*", "payment.", false},
		{"a nested prefix wildcard matches below its level only", "payment.card.*", "payment.bank.x", false},
		{"a star inside a name is literal, not a wildcard", "pay*", "payment", false},
		{"an empty pattern matches nothing real", "", "otp.send", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MatchAction(tt.pattern, tt.action); got != tt.want {
				t.Errorf("MatchAction(%q, %q) = %v, want %v", tt.pattern, tt.action, got, tt.want)
			}
		})
	}
}

func TestValidActionAndPattern(t *testing.T) {
	long := strings.Repeat("a", MaxActionLen)
	tests := []struct {
		name          string
		in            string
		action, ptern bool
	}{
		{"a dotted lower-case name is valid", "otp.send", true, true},
		{"digits, underscores, colons and dashes are valid", "v2:login_attempt-web", true, true},
		{"upper-case letters are valid", "Payment.Card", true, true},
		{"a name of the maximum length is valid", long, true, true},
		{"a name one over the maximum length is invalid", long + "a", false, false},
		{"an empty name is invalid", "", false, false},
		{"a leading dot is an empty segment", ".otp", false, false},
		{"a trailing dot is an empty segment", "otp.", false, false},
		{"a double dot is an empty segment", "otp..send", false, false},
		{"a space is invalid", "otp send", false, false},
		{"a slash is invalid", "otp/send", false, false},
		{"non-ASCII letters are invalid", "pаyment", false, false},
		{"a star is a pattern, not an action", "*", false, true},
		{"a prefix wildcard is a pattern, not an action", "payment.*", false, true},
		{"a wildcard over an invalid prefix is invalid", "pay..*", false, false},
		{"a bare wildcard suffix is invalid", ".*", false, false},
		{"a star inside a segment is invalid", "pay*", false, false},
		{"a wildcard over a maximal name is valid", long + ".*", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ValidAction(tt.in); got != tt.action {
				t.Errorf("ValidAction(%q) = %v, want %v", tt.in, got, tt.action)
			}
			if got := ValidPattern(tt.in); got != tt.ptern {
				t.Errorf("ValidPattern(%q) = %v, want %v", tt.in, got, tt.ptern)
			}
		})
	}
}

func TestMethods(t *testing.T) {
	tests := []struct {
		name, pattern, method string
		match, validPattern   bool
	}{
		{"a star matches any method", "*", "DELETE", true, true},
		{"the same method matches", "POST", "POST", true, true},
		{"a lower-case policy method matches an upper-case request", "post", "POST", true, true},
		{"a different method does not match", "GET", "POST", false, true},
		{"a prefix of a method does not match", "PO", "POST", false, true},
		{"a method with a dash is valid", "M-SEARCH", "M-SEARCH", true, true},
		{"an empty method pattern is invalid and matches nothing", "", "POST", false, false},
		{"a method with a space is invalid", "GE T", "GE T", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MatchMethod(tt.pattern, tt.method); got != tt.match {
				t.Errorf("MatchMethod(%q, %q) = %v, want %v", tt.pattern, tt.method, got, tt.match)
			}
			if got := ValidMethodPattern(tt.pattern); got != tt.validPattern {
				t.Errorf("ValidMethodPattern(%q) = %v, want %v", tt.pattern, got, tt.validPattern)
			}
		})
	}
	if ValidMethod("*") {
		t.Error(`ValidMethod("*") = true, want false: a star is only a pattern`)
	}
	if ValidMethod(strings.Repeat("A", MaxMethodLen+1)) {
		t.Error("ValidMethod accepted a method over the length limit")
	}
}

// TestMatchActionMatchesModel compares with the rule written with the
// strings package, on random strings over an alphabet rich in the
// characters that matter.
func TestMatchActionMatchesModel(t *testing.T) {
	const alphabet = "aAbB.*:-_x"
	r := rand.New(rand.NewPCG(7, 8))
	word := func() string {
		b := make([]byte, r.IntN(7))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	ref := func(p, a string) bool {
		p, a = strings.ToLower(p), strings.ToLower(a)
		if p == "*" {
			return true
		}
		if strings.HasSuffix(p, ".*") && len(p) > 2 {
			prefix := strings.TrimSuffix(p, "*")
			return strings.HasPrefix(a, prefix) && len(a) > len(prefix)
		}
		return p == a
	}
	for i := 0; i < 200_000; i++ {
		p, a := word(), word()
		if i%3 == 0 && len(a) > 0 { // make wildcard hits common
			p = a[:r.IntN(len(a))] + ".*"
		}
		if got, want := MatchAction(p, a), ref(p, a); got != want {
			t.Fatalf("MatchAction(%q, %q) = %v, model %v", p, a, got, want)
		}
		if ValidAction(a) && ValidPattern(p) && !strings.Contains(p, "*") && MatchAction(p, a) != strings.EqualFold(p, a) {
			t.Fatalf("exact match of valid %q and %q disagrees with strings.EqualFold", p, a)
		}
	}
}
