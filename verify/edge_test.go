package verify

import "testing"

func TestPathWithin(t *testing.T) {
	tests := []struct {
		name        string
		path, bound string
		ok          bool
	}{
		{"no bound path admits all", "/x", "", true},
		{"the bound path itself", "/checkout", "/checkout", true},
		{"a path below it", "/checkout/pay", "/checkout", true},
		{"a sibling sharing a prefix", "/checkouts", "/checkout", false},
		{"a bound path ending in a slash refuses a longer name", "/apiary", "/api/", false},
		{"below a slash-terminated bound", "/api/v1", "/api/", true},
		// Dot segments and encodings that an origin would resolve to
		// another path never pass (the bypasses found in the hardening
		// issue and their cousins).
		{"dot-dot out of the bound path", "/checkout/pay/../refund", "/checkout/pay", false},
		{"encoded dot-dots out of the bound path", "/checkout/pay/%2e%2e/%2e%2e/admin", "/checkout/pay", false},
		{"encoded slashes", "/checkout/pay/..%2F..%2Fadmin", "/checkout/pay", false},
		{"lower-case encoded slashes", "/checkout/pay/..%2f..%2fadmin", "/checkout/pay", false},
		{"encoded backslashes", "/checkout/pay/..%5C..%5Cadmin", "/checkout/pay", false},
		{"literal backslashes", "/checkout/pay/..\\..\\admin", "/checkout/pay", false},
		{"double encoding", "/checkout/pay/%252e%252e/admin", "/checkout/pay", false},
		{"an encoded NUL", "/checkout/pay%00/x", "/checkout/pay", false},
		{"a dot-dot that stays inside", "/checkout/pay/a/../b", "/checkout/pay", true},
		{"a single dot segment", "/checkout/./pay", "/checkout/pay", true},
		{"an encoded letter decodes once", "/checkout/p%61y", "/checkout/pay", true},
		{"a longer name on a segment boundary", "/checkout/payment", "/checkout/pay", false},
		{"dot-dot above the root", "/../../checkout/pay", "/checkout/pay", true},
		{"a relative path", "checkout/pay", "/checkout/pay", false},
		{"malformed escapes", "/checkout/pay/%zz", "/checkout/pay", false},
		// Path parameters: Tomcat, Jetty and Spring strip ";params" from a
		// segment and then resolve "..", the classic bypass behind an
		// auth_request proxy. A ";" in any segment, literal or encoded,
		// is refused.
		{"a dot-dot with an empty path parameter", "/checkout/..;/admin", "/checkout", false},
		{"an encoded dot-dot with a path parameter", "/checkout/%2e%2e;/admin", "/checkout", false},
		{"a dot-dot with a named path parameter", "/checkout/..;x=1/admin", "/checkout", false},
		{"a dot with a path parameter then a dot-dot", "/checkout/.;/../admin", "/checkout", false},
		{"an encoded semicolon", "/checkout/..%3b/admin", "/checkout", false},
		{"a path parameter on an ordinary segment", "/checkout;jsessionid=1/pay", "/checkout", false},
		// A decoded "?" or "#" that an origin splits on.
		{"an encoded question mark before a dot-dot", "/admin%3f/../checkout", "/checkout", false},
		{"an encoded hash before a dot-dot", "/admin%23/../checkout", "/checkout", false},
		{"an upper-case encoded question mark", "/admin%3F/../checkout", "/checkout", false},
		{"a literal question mark that reached the decision", "/admin?/../checkout", "/checkout", false},
		// Look-alike dots: overlong UTF-8 and characters that a Unicode
		// normalisation (NFKC) turns into dots, slashes or separators.
		{"overlong UTF-8 dots", "/checkout/%c0%ae%c0%ae/admin", "/checkout", false},
		{"an overlong UTF-8 slash", "/checkout/..%c0%afadmin", "/checkout", false},
		{"full-width dots", "/checkout/%ef%bc%8e%ef%bc%8e/admin", "/checkout", false},
		{"a two-dot leader", "/checkout/%e2%80%a5/admin", "/checkout", false},
		{"a one-dot leader", "/checkout/%e2%80%a4%e2%80%a4/admin", "/checkout", false},
		{"a small full stop", "/checkout/%ef%b9%92%ef%b9%92/admin", "/checkout", false},
		{"a full-width slash", "/checkout/..%ef%bc%8fadmin", "/checkout", false},
		{"a full-width semicolon", "/checkout/..%ef%bc%9b/admin", "/checkout", false},
		{"a Greek question mark (canonically a semicolon)", "/checkout/..%cd%be/admin", "/checkout", false},
		{"invalid UTF-8", "/checkout/%ff/admin", "/checkout", false},
		{"a soft hyphen after a dot-dot", "/checkout/..%c2%ad/admin", "/checkout", false},
		{"a zero-width space between dots", "/checkout/.%e2%80%8b./admin", "/checkout", false},
		{"a byte-order mark after a dot-dot", "/checkout/..%ef%bb%bf/admin", "/checkout", false},
		{"a variation selector after a dot-dot", "/checkout/..%ef%b8%8f/admin", "/checkout", false},
		{"a C1 control", "/checkout/%c2%85/admin", "/checkout", false},
		{"raw full-width dots", "/checkout/\uff0e\uff0e/admin", "/checkout", false},
		{"non-ASCII letters are still a path", "/checkout/%c3%bcber", "/checkout", true},
		{"raw non-ASCII letters are still a path", "/checkout/\u00fcber", "/checkout", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := pathWithin(tc.path, tc.bound); got != tc.ok {
				t.Fatalf("pathWithin(%q, %q) = %v", tc.path, tc.bound, got)
			}
		})
	}
}

func TestPreclearanceAndDecision(t *testing.T) {
	e := mustNewEnv(t)
	v, err := e.siteverify(Request{Response: []byte(e.mint(nil))})
	if err != nil || !v.Success() {
		t.Fatalf("%+v %v", v, err)
	}
	if _, err := e.m.IssuePreclearance(e.cat, e.site(), &PreclearanceInput{AssessmentID: "00000000-0000-4000-8000-000000000000"}); code(err) != "unknown-assessment" {
		t.Fatalf("an unknown assessment: %v", err)
	}
	for _, in := range []PreclearanceInput{{AssessmentID: v.AssessmentID, TTLSeconds: 5}, {AssessmentID: v.AssessmentID, Path: "/a/../b"},
		{AssessmentID: v.AssessmentID, Host: "not a host"}, {AssessmentID: "x"}} {
		if _, err := e.m.IssuePreclearance(e.cat, e.site(), &in); code(err) != "invalid-field" {
			t.Fatalf("%+v: %v", in, err)
		}
	}
	pv, err := e.m.IssuePreclearance(e.cat, e.site(), &PreclearanceInput{AssessmentID: v.AssessmentID, Host: "Shop.Example.com",
		Path: "/checkout", Subject: "user-1", TTLSeconds: 60})
	if err != nil || len(pv.Bound) != 4 || pv.ExpiresIn != 60 {
		t.Fatalf("%+v %v", pv, err)
	}
	ok := EdgeRequest{Clearance: pv.Clearance, Host: testHost, Path: "/checkout/pay", Subject: "user-1"}
	tests := []struct {
		name string
		mod  func(*EdgeRequest)
		want string
	}{
		{"a request within every binding is allowed", func(*EdgeRequest) {}, ""},
		{"no clearance is refused", func(r *EdgeRequest) { r.Clearance = "" }, "clearance-required"},
		{"a forged clearance is refused", func(r *EdgeRequest) { r.Clearance += "x" }, "clearance-required"},
		{"another host is refused", func(r *EdgeRequest) { r.Host = "evil.example" }, "clearance-required"},
		{"a sibling path is refused", func(r *EdgeRequest) { r.Path = "/checkouts" }, "clearance-required"},
		{"an encoded escape of the path is refused", func(r *EdgeRequest) { r.Path = "/checkout/..%2f..%2fadmin" }, "clearance-required"},
		{"another subject is refused", func(r *EdgeRequest) { r.Subject = "user-2" }, "clearance-required"},
		{"another site's key pin is refused", func(r *EdgeRequest) { r.SiteKey = "site_other" }, "clearance-required"},
		{"this site's key pin is allowed", func(r *EdgeRequest) { r.SiteKey = "site_pub" }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := ok
			tc.mod(&r)
			d, err := e.m.Decide(e.cat, &r)
			if code(err) != tc.want || (err == nil && (!d.Allow || d.AssessmentID != v.AssessmentID)) {
				t.Fatalf("%+v %v, want %q", d, err, tc.want)
			}
		})
	}
	e.advance(61e9)
	if _, err := e.m.Decide(e.cat, &ok); code(err) != "clearance-required" {
		t.Fatalf("an expired clearance: %v", err)
	}
}
