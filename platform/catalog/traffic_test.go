package catalog

import (
	"errors"
	"testing"
)

func mustApplyTraffic(t *testing.T, c *Catalog, cmds ...Command) (*Catalog, error) {
	t.Helper()
	tx := Begin(c)
	for _, cmd := range cmds {
		if _, err := cmd.Apply(tx); err != nil {
			return c, err
		}
	}
	return tx.Commit(c.Index + 1), nil
}

func TestTrafficControlCommands(t *testing.T) {
	c, err := mustApplyTraffic(t, Empty(),
		&CreateWorkspace{Workspace: Workspace{ID: "w1"}},
		&CreateWorkspace{Workspace: Workspace{ID: "w2"}},
		&PutConcurrencyConstraint{Constraint: ConcurrencyConstraint{ID: "k2", WorkspaceID: "w1", Name: "b"}},
		&PutConcurrencyConstraint{Constraint: ConcurrencyConstraint{ID: "k1", WorkspaceID: "w1", Name: "a"}},
		&PutConcurrencyConstraint{Constraint: ConcurrencyConstraint{ID: "k3", WorkspaceID: "w2", Name: "a"}},
		&PutDependency{Dependency: Dependency{ID: "d1", WorkspaceID: "w1", Name: "payments"}},
		&PutDependency{Dependency: Dependency{ID: "d2", WorkspaceID: "w2", Name: "payments"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("a workspace's constraints are listed in ID order", func(t *testing.T) {
		ks := c.ConstraintsOf("w1")
		if len(ks) != 2 || ks[0].ID != "k1" || ks[1].ID != "k2" {
			t.Fatalf("constraints of w1: %+v", ks)
		}
	})
	t.Run("dependencies are found by workspace and name", func(t *testing.T) {
		if d := c.DependencyByName("w2", "payments"); d == nil || d.ID != "d2" {
			t.Fatalf("got %+v", d)
		}
	})
	t.Run("a second constraint with the same name in a workspace conflicts", func(t *testing.T) {
		_, err := mustApplyTraffic(t, c, &PutConcurrencyConstraint{Constraint: ConcurrencyConstraint{ID: "k9", WorkspaceID: "w1", Name: "a"}})
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("replacing a constraint under its own ID keeps its name", func(t *testing.T) {
		if _, err := mustApplyTraffic(t, c, &PutConcurrencyConstraint{Constraint: ConcurrencyConstraint{ID: "k1", WorkspaceID: "w1", Name: "a", Capacity: 9}}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a constraint cannot move to another workspace", func(t *testing.T) {
		_, err := mustApplyTraffic(t, c, &PutConcurrencyConstraint{Constraint: ConcurrencyConstraint{ID: "k1", WorkspaceID: "w2", Name: "z"}})
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("deleting a workspace deletes its constraints and dependencies only", func(t *testing.T) {
		next, err := mustApplyTraffic(t, c, &DeleteWorkspace{ID: "w1"})
		if err != nil {
			t.Fatal(err)
		}
		if len(next.ConcurrencyConstraints) != 1 || next.ConcurrencyConstraints["k3"] == nil ||
			len(next.Dependencies) != 1 || next.DependencyByName("w1", "payments") != nil {
			t.Fatalf("after delete: %+v %+v", next.ConcurrencyConstraints, next.Dependencies)
		}
		if len(c.ConcurrencyConstraints) != 3 {
			t.Fatal("the previous catalog version changed")
		}
	})
	t.Run("the tables survive a snapshot", func(t *testing.T) {
		b, err := c.MarshalSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		r, err := UnmarshalSnapshot(b)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.ConstraintsOf("w1")) != 2 || r.DependencyByName("w1", "payments") == nil {
			t.Fatal("restored catalog lost traffic-control tables or their indexes")
		}
	})
}
