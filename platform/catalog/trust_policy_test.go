package catalog

import (
	"errors"
	"fmt"
	"testing"
)

func TestTrustPolicies(t *testing.T) {
	c, err := mustApplyTraffic(t, Empty(),
		&CreateWorkspace{Workspace: Workspace{ID: "w1"}},
		&CreateWorkspace{Workspace: Workspace{ID: "w2"}},
		&PutTrustPolicy{Policy: TrustPolicy{ID: "p1", WorkspaceID: "w1", Name: "big", Condition: "true", Outcome: "review", Mode: "observe"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		cmd  Command
		want error
	}{
		{"an unknown workspace is refused", &PutTrustPolicy{Policy: TrustPolicy{ID: "p2", WorkspaceID: "nope", Name: "x"}}, ErrNotFound},
		{"another workspace's policy cannot be replaced", &PutTrustPolicy{Policy: TrustPolicy{ID: "p1", WorkspaceID: "w2", Name: "x"}}, ErrNotFound},
		{"a duplicate name is refused", &PutTrustPolicy{Policy: TrustPolicy{ID: "p2", WorkspaceID: "w1", Name: "big"}}, ErrConflict},
		{"an over-long condition is refused", &PutTrustPolicy{Policy: TrustPolicy{ID: "p2", WorkspaceID: "w1", Name: "x", Condition: string(make([]byte, 2049))}}, ErrConflict},
		{"the same name in another workspace is fine", &PutTrustPolicy{Policy: TrustPolicy{ID: "p3", WorkspaceID: "w2", Name: "big"}}, nil},
		{"another workspace cannot delete it", &DeleteTrustPolicy{WorkspaceID: "w2", ID: "p1"}, ErrNotFound},
	}
	for _, tc := range cases {
		if _, err := mustApplyTraffic(t, c, tc.cmd); tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	t.Run("a workspace holds at most MaxTrustPoliciesPerWorkspace", func(t *testing.T) {
		tx := Begin(c)
		for i := 1; i < MaxTrustPoliciesPerWorkspace; i++ {
			if _, err := (&PutTrustPolicy{Policy: TrustPolicy{ID: fmt.Sprint("q", i), WorkspaceID: "w1", Name: fmt.Sprint("n", i)}}).Apply(tx); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := (&PutTrustPolicy{Policy: TrustPolicy{ID: "over", WorkspaceID: "w1", Name: "over"}}).Apply(tx); !errors.Is(err, ErrConflict) {
			t.Fatalf("over the cap: %v", err)
		}
		if _, err := (&PutTrustPolicy{Policy: TrustPolicy{ID: "p1", WorkspaceID: "w1", Name: "big", Mode: "enforce"}}).Apply(tx); err != nil {
			t.Fatalf("replacing at the cap: %v", err)
		}
	})
	t.Run("a policy survives a snapshot and goes with its workspace", func(t *testing.T) {
		b, err := c.MarshalSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		r, err := UnmarshalSnapshot(b)
		if err != nil || r.TrustPolicies["p1"] == nil || r.TrustPolicies["p1"].Name != "big" {
			t.Fatalf("restore: %v %+v", err, r.TrustPolicies)
		}
		d, err := mustApplyTraffic(t, c, &DeleteWorkspace{ID: "w1"})
		if err != nil || len(d.TrustPolicies) != 0 {
			t.Fatalf("after deleting the workspace: %v %d", err, len(d.TrustPolicies))
		}
	})
	t.Run("commands round-trip through their wire form", func(t *testing.T) {
		for _, cmd := range []Command{&PutTrustPolicy{Policy: *c.TrustPolicies["p1"]}, &DeleteTrustPolicy{WorkspaceID: "w1", ID: "p1"}} {
			b, err := Encode(cmd)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Decode(cmd.Kind(), b); err != nil {
				t.Fatalf("%s: %v", cmd.Kind(), err)
			}
		}
	})
}
