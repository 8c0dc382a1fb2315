package users

import (
	"strings"
	"testing"
)

var cheap = Params{Memory: 64, Time: 1, Threads: 1}

func TestRolesAllow(t *testing.T) {
	for _, tc := range []struct {
		role string
		p    Permission
		want bool
	}{
		{"viewer", View, true}, {"viewer", Edit, false}, {"viewer", Approve, false}, {"viewer", Admin, false},
		{"editor", View, true}, {"editor", Edit, true}, {"editor", Approve, false}, {"editor", Admin, false},
		{"approver", View, true}, {"approver", Edit, false}, {"approver", Approve, true}, {"approver", Admin, false},
		{"", View, false}, {"owner", Edit, false},
	} {
		if got := Allows(tc.role, tc.p); got != tc.want {
			t.Errorf("Allows(%q, %s) = %v, want %v", tc.role, tc.p, got, tc.want)
		}
	}
}

func TestHashVerify(t *testing.T) {
	h := Hash("correct horse battery", cheap)
	if !strings.HasPrefix(h, "$argon2id$v=19$m=64,t=1,p=1$") {
		t.Fatalf("hash %q is not a PHC argon2id string", h)
	}
	if !Verify(h, "correct horse battery") {
		t.Fatal("the right password does not verify")
	}
	if Verify(h, "correct horse batterz") {
		t.Fatal("a wrong password verifies")
	}
	if h2 := Hash("correct horse battery", cheap); h2 == h {
		t.Fatal("two hashes of one password share a salt")
	}
	for _, bad := range []string{"", "$argon2i$v=19$m=64,t=1,p=1$c2FsdHNhbHQ$" + strings.Repeat("A", 43),
		"$argon2id$v=19$m=99999999,t=1,p=1$c2FsdHNhbHQ$" + strings.Repeat("A", 43),
		"$argon2id$v=19$m=64,t=1,p=1$!!$" + strings.Repeat("A", 43), h + "$"} {
		if Verify(bad, "correct horse battery") {
			t.Errorf("malformed hash %q verifies", bad)
		}
	}
	if VerifyMissing("x") {
		t.Fatal("VerifyMissing returned true")
	}
}

func TestRules(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"Ada@Example.com", "ada@example.com", true},
		{"ada@example", "", false},
		{"Ada <ada@example.com>", "", false},
		{"", "", false},
		{strings.Repeat("a", 250) + "@x.io", "", false},
	} {
		got, err := NormalizeEmail(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("NormalizeEmail(%q) = %q, %v", tc.in, got, err)
		}
	}
	if ValidRole("editor") != nil || ValidRole("admin") == nil {
		t.Fatal("role rule wrong")
	}
	if ValidPassword("short") == nil || ValidPassword(strings.Repeat("x", 257)) == nil || ValidPassword("twelve chars") != nil {
		t.Fatal("password rule wrong")
	}
}
