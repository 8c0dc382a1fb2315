package trust

import (
	"slices"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/errcode"
)

func TestWidgetProof(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	fresh := WidgetToken{Known: true, Action: "login", Issued: now.Add(-time.Minute), AssessmentID: "a1"}
	spent := fresh
	spent.Codes, spent.Spent = []string{"timeout-or-duplicate"}, true
	tests := []struct {
		name       string
		req        SiteverifyRequest
		w          WidgetToken
		codes      []string
		assessment string
	}{
		{"a token that is not ours proves nothing", SiteverifyRequest{}, WidgetToken{}, []string{errcode.CodeInvalidResponse}, ""},
		{"a fresh token without requirements succeeds and hands out its verification", SiteverifyRequest{}, fresh, nil, "a1"},
		{"a token proves presence only, so an expected assurance fails", SiteverifyRequest{ExpectedAssurance: "standard"}, fresh, []string{"insufficient-assurance"}, ""},
		{"a required identity is never a widget token's", SiteverifyRequest{RequireIdentity: true}, fresh, []string{"identity-not-verified"}, ""},
		{"the exchange's own action check is not repeated", SiteverifyRequest{Action: "other"}, fresh, nil, "a1"},
		{"a spent token keeps its code and is not checked further", SiteverifyRequest{ExpectedAssurance: "high"}, spent, []string{"timeout-or-duplicate"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := WidgetProof(tc.req, tc.w, now)
			if !slices.Equal(res.Codes, tc.codes) && !(len(res.Codes) == 0 && len(tc.codes) == 0) {
				t.Fatalf("codes %v, want %v", res.Codes, tc.codes)
			}
			if res.AssessmentID != tc.assessment || res.Known != tc.w.Known {
				t.Fatalf("%+v", res)
			}
			if res.Known && (res.Achieved.Assurance != LevelNone || res.Achieved.Method != MethodHuman || res.Achieved.AuthorizationCapable()) {
				t.Fatalf("a widget token achieved %+v", res.Achieved)
			}
		})
	}
}

func TestAuthorizationCapableNeedsIdentityAndOperation(t *testing.T) {
	for _, c := range []struct{ identity, operation, want bool }{{false, false, false}, {true, false, false}, {false, true, false}, {true, true, true}} {
		if got := AuthorizationCapable(c.identity, c.operation); got != c.want {
			t.Errorf("identity %v operation %v: %v", c.identity, c.operation, got)
		}
	}
}
