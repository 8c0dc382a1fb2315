package catalog

import (
	"errors"
	"strings"
	"testing"

	"github.com/trustd/trustd/platform/errcode"
)

func TestValidPolicyTargetNamesTheWrongField(t *testing.T) {
	c := Empty()
	c.Sites["s1"] = &Site{ID: "s1", WorkspaceID: "ws1"}
	c.Sites["s2"] = &Site{ID: "s2", WorkspaceID: "ws2"}
	c.MobileApps["m1"] = &MobileApp{ID: "m1", WorkspaceID: "ws1"}
	c.MobileApps["m2"] = &MobileApp{ID: "m2", WorkspaceID: "ws2"}
	for _, tc := range []struct {
		name   string
		target PolicyTargetBody
		field  string // "" when valid
	}{
		{"the whole workspace is a target", PolicyTargetBody{Type: TargetWorkspace}, ""},
		{"a site of the workspace is a target", PolicyTargetBody{Type: TargetSite, ID: "s1"}, ""},
		{"a mobile app of the workspace is a target", PolicyTargetBody{Type: TargetMobileApp, ID: "m1"}, ""},
		{"a workspace target names no id", PolicyTargetBody{Type: TargetWorkspace, ID: "s1"}, "target.id"},
		{"another workspace's site is refused", PolicyTargetBody{Type: TargetSite, ID: "s2"}, "target.id"},
		{"an unknown site is refused", PolicyTargetBody{Type: TargetSite, ID: "nope"}, "target.id"},
		{"another workspace's app is refused", PolicyTargetBody{Type: TargetMobileApp, ID: "m2"}, "target.id"},
		{"a site id is not an app id", PolicyTargetBody{Type: TargetMobileApp, ID: "s1"}, "target.id"},
		{"an unknown type is refused", PolicyTargetBody{Type: "tenant"}, "target.type"},
		{"an empty type is refused", PolicyTargetBody{}, "target.type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.ValidPolicyTarget("ws1", &tc.target)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			_, msg, ok := errcode.From(err)
			if !ok || !errors.Is(err, errcode.ErrInvalidField) || !strings.HasPrefix(msg, tc.field+": ") {
				t.Fatalf("got %v (message %q), want invalid-field naming %s", err, msg, tc.field)
			}
		})
	}
}
