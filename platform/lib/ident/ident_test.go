package ident

import (
	"strings"
	"testing"
)

func TestValid(t *testing.T) {
	tests := []struct {
		name string
		v    string
		ok   bool
	}{
		{"an ASCII id", "user-42", true},
		{"an e-mail address", "ana@example.com", true},
		{"a name in another script", "Ünïcødé-用户-42", true},
		{"empty", "", false},
		{"the longest", strings.Repeat("a", MaxLen), true},
		{"one byte too long", strings.Repeat("a", MaxLen+1), false},
		{"a tab", "a\tb", false},
		{"a newline", "a\nb", false},
		{"DEL", "a\x7fb", false},
		{"a C1 control", "a\u0085b", false},
		{"invalid UTF-8", "a\xffb", false},
		{"a truncated rune", "a\xe2\x82", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Valid(tt.v); got != tt.ok {
				t.Fatalf("Valid(%q) = %v, want %v", tt.v, got, tt.ok)
			}
			if got := Valid([]byte(tt.v)); got != tt.ok {
				t.Fatalf("Valid([]byte(%q)) = %v, want %v", tt.v, got, tt.ok)
			}
		})
	}
}

func BenchmarkValidBytes(b *testing.B) {
	v := []byte("user-4242424242@example.com")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if !Valid(v) {
			b.Fatal("invalid")
		}
	}
}

func TestHostname(t *testing.T) {
	tests := []struct {
		h  string
		ok bool
	}{
		{"shop.example.com", true}, {"localhost", true}, {"a-b.c", true}, {"127.0.0.1", true}, {"::1", true},
		{"2001:db8::1", true}, {"", false}, {"Shop.example.com", false}, {"-a.com", false}, {"a-.com", false},
		{"a..com", false}, {".a.com", false}, {"a.com.", false}, {"a_b.com", false}, {"fe80::1%eth0", false},
		{strings.Repeat("a", 64) + ".com", false}, {strings.Repeat("a", 63) + ".com", true},
		{strings.Repeat("a.", 127) + "a", false}, {"host:80", false}, {"ex ample.com", false},
	}
	for _, tc := range tests {
		if got := Hostname(tc.h); got != tc.ok {
			t.Errorf("Hostname(%q) = %v, want %v", tc.h, got, tc.ok)
		}
	}
}

func TestActionAndPrintable(t *testing.T) {
	tests := []struct {
		name      string
		v         string
		action    bool
		printable bool
	}{
		{"a dotted action", "payment.approve", true, true},
		{"every allowed character", "aZ09_-./", true, true},
		{"the longest action", strings.Repeat("a", MaxActionLen), true, true},
		{"one byte too long for an action", strings.Repeat("a", MaxActionLen+1), false, true},
		{"empty", "", false, true},
		{"a space is printable, not an action", "pay now", false, true},
		{"a colon", "pay:now", false, true},
		{"a tab", "pay\tnow", false, false},
		{"DEL", "pay\x7f", false, false},
		{"non-ASCII", "paiement-é", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Action(tt.v); got != tt.action {
				t.Errorf("Action(%q) = %v, want %v", tt.v, got, tt.action)
			}
			if got := Printable(tt.v); got != tt.printable {
				t.Errorf("Printable(%q) = %v, want %v", tt.v, got, tt.printable)
			}
		})
	}
}

func TestEqualFoldASCII(t *testing.T) {
	tests := []struct {
		a, b string
		ok   bool
	}{
		{"Shop.Example.COM", "shop.example.com", true}, {"", "", true}, {"a", "b", false}, {"ab", "a", false},
		{"\u212a", "k", false}, {"K", "k", true}, {"[", "{", false}, {"@", "`", false},
	}
	for _, tc := range tests {
		if got := EqualFoldASCII(tc.a, tc.b); got != tc.ok {
			t.Errorf("EqualFoldASCII(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.ok)
		}
	}
}
