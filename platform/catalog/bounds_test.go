package catalog

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// Every table of the Catalog is in Bounds, and every table a tenant
// writes has a limit: a new table without a cap fails here (issue 24).
func TestEveryCatalogTableIsBounded(t *testing.T) {
	bounds := map[string]Bound{}
	for _, b := range Bounds {
		if _, dup := bounds[b.Table]; dup {
			t.Errorf("Bounds names %s twice", b.Table)
		}
		bounds[b.Table] = b
		if b.How == "" {
			t.Errorf("%s: say how it is bounded, or why no tenant writes it", b.Table)
		}
	}
	ct := reflect.TypeOf(Catalog{})
	tables := map[string]bool{}
	for i := 0; i < ct.NumField(); i++ {
		f := ct.Field(i)
		if !f.IsExported() || (f.Type.Kind() != reflect.Map && f.Type.Kind() != reflect.Slice) {
			continue // scalars (index, admin token hash) have one size
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		tables[name] = true
		b, ok := bounds[name]
		switch {
		case !ok:
			t.Errorf("the catalog table %s (Catalog.%s) has no entry in Bounds: give it a per-workspace cap enforced in its commands' Apply", name, f.Name)
		case b.Limit < 0:
			t.Errorf("%s: a negative limit", name)
		}
	}
	for name := range bounds {
		if !tables[name] {
			t.Errorf("Bounds names %s, which is no table of the Catalog", name)
		}
	}
	// The tables no tenant writes are these, and only these.
	for name, b := range bounds {
		untenanted := name == "workspaces" || name == "keys" || name == "feedback" || name == "nodes"
		if (b.Limit == 0) != untenanted {
			t.Errorf("%s: limit %d; only workspaces, keys, cluster membership and the legacy feedback records are written by no tenant", name, b.Limit)
		}
	}
}

// The tables capped by issue 24 refuse the record past their cap, in the
// command's Apply (so two racing creates cannot both pass a handler's
// check), count per workspace, and count a replace as no new record.
func TestTheNewCapsRefuseTheRecordPastThem(t *testing.T) {
	tables := []struct {
		table    string
		limit    int
		replaces bool // the command is a put: the same id replaces
		make     func(ws string, i int) Command
	}{
		{"sites", MaxSitesPerWorkspace, false, func(ws string, i int) Command {
			return &CreateSite{Site: Site{ID: fmt.Sprint(ws, "-s", i), WorkspaceID: ws, SiteKey: fmt.Sprint(ws, "-k", i)}}
		}},
		{"mobile_apps", MaxMobileAppsPerWorkspace, false, func(ws string, i int) Command {
			return &CreateMobileApp{App: MobileApp{ID: fmt.Sprint(ws, "-m", i), WorkspaceID: ws, Platform: "ios", AppID: fmt.Sprint("com.a", i),
				SecretHash: HashSecret(fmt.Sprint(ws, "-m", i))}}
		}},
		{"credentials", MaxCredentialsPerWorkspace, false, func(ws string, i int) Command {
			return &CreateCredential{Credential: Credential{ID: fmt.Sprint(ws, "-c", i), WorkspaceID: ws, Scopes: []string{"site.verify"},
				TokenHash: HashSecret(fmt.Sprint(ws, "-c", i))}}
		}},
		{"concurrency_constraints", MaxConcurrencyConstraintsPerWorkspace, true, func(ws string, i int) Command {
			return &PutConcurrencyConstraint{Constraint: ConcurrencyConstraint{ID: fmt.Sprint(ws, "-k", i), WorkspaceID: ws, Name: fmt.Sprint("c", i)}}
		}},
		{"dependencies", MaxDependenciesPerWorkspace, true, func(ws string, i int) Command {
			return &PutDependency{Dependency: Dependency{ID: fmt.Sprint(ws, "-d", i), WorkspaceID: ws, Name: fmt.Sprint("d", i)}}
		}},
	}
	for _, tc := range tables {
		t.Run(tc.table, func(t *testing.T) {
			if b := boundOf(tc.table); b.Limit != tc.limit {
				t.Fatalf("Bounds says %d, the command caps at %d", b.Limit, tc.limit)
			}
			c := mustApply(t, Empty(), &CreateWorkspace{Workspace: Workspace{ID: "w1"}}, &CreateWorkspace{Workspace: Workspace{ID: "w2"}})
			// One transaction fills the workspace: the table is cloned once.
			tx := Begin(c)
			for i := 0; i < tc.limit; i++ {
				if _, err := tc.make("w1", i).Apply(tx); err != nil {
					t.Fatalf("record %d of %d: %v", i+1, tc.limit, err)
				}
			}
			c = tx.Commit(c.Index + 1)
			_, err := tc.make("w1", tc.limit).Apply(Begin(c))
			if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "the most allowed") {
				t.Fatalf("record %d: %v, want a conflict at the cap", tc.limit+1, err)
			}
			if _, err := tc.make("w2", 0).Apply(Begin(c)); err != nil {
				t.Fatalf("another workspace is not full: %v", err)
			}
			if tc.replaces {
				if _, err := tc.make("w1", 0).Apply(Begin(c)); err != nil {
					t.Fatalf("replacing a record at the cap: %v", err)
				}
			}
			// A deleted record makes room again.
			c = mustApply(t, c, deleteOf(tc.table, "w1", 0))
			if _, err := tc.make("w1", tc.limit).Apply(Begin(c)); err != nil {
				t.Fatalf("after a delete: %v", err)
			}
		})
	}
}

func boundOf(table string) Bound {
	for _, b := range Bounds {
		if b.Table == table {
			return b
		}
	}
	return Bound{}
}

func deleteOf(table, ws string, i int) Command {
	switch table {
	case "sites":
		return &DeleteSite{WorkspaceID: ws, ID: fmt.Sprint(ws, "-s", i)}
	case "mobile_apps":
		return &DeleteMobileApp{WorkspaceID: ws, ID: fmt.Sprint(ws, "-m", i)}
	case "credentials":
		return &DeleteCredential{WorkspaceID: ws, ID: fmt.Sprint(ws, "-c", i)}
	case "concurrency_constraints":
		return &DeleteConcurrencyConstraint{WorkspaceID: ws, ID: fmt.Sprint(ws, "-k", i)}
	default:
		return &DeleteDependency{WorkspaceID: ws, ID: fmt.Sprint(ws, "-d", i)}
	}
}
