package catalog

import (
	"testing"
)

// A Raft log written by the build before the owned-table helpers: each
// entry is (kind, JSON body) as stored, with the outcome that build gave
// it. Replaying it must decode every entry and give the same outcome, so
// existing logs and snapshots apply alike.
func TestAnExistingLogAppliesAlike(t *testing.T) {
	log := []struct{ kind, body, err string }{
		{"workspace.create", `{"workspace":{"workspace_id":"w1","name":"a"}}`, ""},
		{"workspace.create", `{"workspace":{"workspace_id":"w2","name":"b"}}`, ""},
		{"site.create", `{"site":{"site_id":"s1","workspace_id":"w1","name":"shop","site_key":"site_k1"}}`, ""},
		{"site.create", `{"site":{"site_id":"s1","workspace_id":"w1","name":"again"}}`, "catalog: conflict: site s1 exists"},
		{"site.create", `{"site":{"site_id":"s9","workspace_id":"nope"}}`, "catalog: not found: workspace nope"},
		{"site.update", `{"workspace_id":"w2","site_id":"s1","patch":{"name":"x"}}`, "catalog: not found: site s1"},
		{"site.update", `{"workspace_id":"w1","site_id":"s1","patch":{"name":"shop2"}}`, ""},
		{"mobile_app.create", `{"app":{"mobile_app_id":"m1","workspace_id":"w1","platform":"ios","app_id":"com.a"}}`, ""},
		{"mobile_app.create", `{"app":{"mobile_app_id":"m2","workspace_id":"w1","platform":"ios","app_id":"com.a"}}`, "catalog: conflict: ios app com.a is already registered"},
		{"mobile_app.delete", `{"workspace_id":"w2","mobile_app_id":"m1"}`, "catalog: not found: mobile app m1"},
		{"credential.create", `{"credential":{"credential_id":"c1","workspace_id":"w1","scopes":["site.verify"]}}`, ""},
		{"credential.delete", `{"workspace_id":"w1","credential_id":"c1"}`, ""},
		{"credential.delete", `{"workspace_id":"w1","credential_id":"c1"}`, "catalog: not found: credential c1"},
		{"concurrency_constraint.put", `{"constraint":{"constraint_id":"k1","workspace_id":"w1","name":"exports"}}`, ""},
		{"concurrency_constraint.put", `{"constraint":{"constraint_id":"k2","workspace_id":"w1","name":"exports"}}`, `catalog: conflict: a concurrency constraint named "exports" exists`},
		{"concurrency_constraint.put", `{"constraint":{"constraint_id":"k1","workspace_id":"w2","name":"z"}}`, "catalog: not found: constraint k1"},
		{"dependency.put", `{"dependency":{"dependency_id":"d1","workspace_id":"w1","name":"pay"}}`, ""},
		{"dependency.put", `{"dependency":{"dependency_id":"d2","workspace_id":"w1","name":"pay"}}`, `catalog: conflict: a dependency named "pay" exists`},
		{"dependency.delete", `{"workspace_id":"w1","dependency_id":"d1"}`, ""},
		{"trust_policy.put", `{"policy":{"trust_policy_id":"t1","workspace_id":"w1","name":"r"}}`, ""},
		{"trust_policy.put", `{"policy":{"trust_policy_id":"t2","workspace_id":"w1","name":"r"}}`, `catalog: conflict: a trust policy named "r" exists`},
		{"rate_limit_policy.create", `{"policy":{"policy_id":"p1","workspace_id":"w1","name":"login","target":{"type":"workspace"}}}`, ""},
		{"rate_limit_policy.create", `{"policy":{"policy_id":"p1","workspace_id":"w1","name":"login","target":{"type":"workspace"}}}`, "catalog: conflict: policy p1 exists"},
		{"rate_limit_policy.replace", `{"policy":{"policy_id":"p1","workspace_id":"w1","name":"login2","target":{"type":"workspace"}}}`, ""},
		{"rate_limit_policy.replace", `{"policy":{"policy_id":"p1","workspace_id":"w2","name":"x","target":{"type":"workspace"}}}`, "catalog: not found: rate-limit policy p1"},
		{"api_protection_policy.create", `{"policy":{"policy_id":"a1","workspace_id":"w1","name":"api","target":{"type":"site","id":"s404"}}}`, "catalog: not found: target site s404 in workspace w1"},
		{"api_protection_policy.create", `{"policy":{"policy_id":"a1","workspace_id":"w1","name":"api","target":{"type":"site","id":"s1"}}}`, ""},
		{"api_protection_policy.delete", `{"workspace_id":"w2","policy_id":"a1"}`, "catalog: not found: API Protection policy a1"},
	}
	c := Empty()
	for i, e := range log {
		cmd, err := Decode(e.kind, []byte(e.body))
		if err != nil {
			t.Fatalf("entry %d (%s) no longer decodes: %v", i, e.kind, err)
		}
		tx := Begin(c)
		_, err = cmd.Apply(tx)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != e.err {
			t.Fatalf("entry %d (%s): %q, want %q", i, e.kind, got, e.err)
		}
		if err == nil {
			c = tx.Commit(uint64(i + 1))
		}
	}
	if s := c.Sites["s1"]; s == nil || s.Name != "shop2" || c.SiteByKey("site_k1") != s {
		t.Fatalf("site after the log: %+v", s)
	}
	if p := c.RateLimitPolicies["p1"]; p == nil || p.Revision != 2 || p.Name != "login2" {
		t.Fatalf("rate-limit policy after the log: %+v", p)
	}
	if a := c.APIProtectionPolicies["a1"]; a == nil || a.Revision != 1 {
		t.Fatalf("API Protection policy after the log: %+v", a)
	}
	if len(c.Credentials) != 0 || len(c.Dependencies) != 0 || len(c.MobileApps) != 1 || len(c.ConcurrencyConstraints) != 1 || len(c.TrustPolicies) != 1 {
		t.Fatalf("tables after the log: %d credentials, %d dependencies, %d apps, %d constraints, %d trust policies",
			len(c.Credentials), len(c.Dependencies), len(c.MobileApps), len(c.ConcurrencyConstraints), len(c.TrustPolicies))
	}
	tx := Begin(c)
	if _, err := (&DeleteWorkspace{ID: "w1"}).Apply(tx); err != nil {
		t.Fatal(err)
	}
	c = tx.Commit(100)
	if len(c.Sites)+len(c.MobileApps)+len(c.ConcurrencyConstraints)+len(c.TrustPolicies)+len(c.RateLimitPolicies)+len(c.APIProtectionPolicies) != 0 {
		t.Fatal("deleting the workspace left records of it")
	}
}
