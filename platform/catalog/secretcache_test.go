package catalog

import (
	"strconv"
	"testing"
	"time"
)

// twice looks secret up twice in c: the first lookup may fill the cache,
// the second is answered from it; both must agree.
func twice(t *testing.T, c *Catalog, secret string, now time.Time) *Site {
	t.Helper()
	a, b := c.SiteBySecret(secret, now), c.SiteBySecret(secret, now)
	if a != b {
		t.Fatalf("SiteBySecret(%q): %v then %v", secret, a, b)
	}
	return a
}

func cachedSecrets(sc *secretCache) int {
	n := 0
	for i := range sc.slots {
		if sc.slots[i].Load() != nil {
			n++
		}
	}
	return n
}

func TestSecretCacheFollowsEveryCatalogChange(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	c, errs := apply(t, Empty(),
		&CreateWorkspace{Workspace: Workspace{ID: "w1", Name: "acme"}},
		&CreateSite{Site: Site{ID: "s1", WorkspaceID: "w1", SiteKey: "key1", SecretHash: HashSecret("secret1")}},
		&CreateSite{Site: Site{ID: "s2", WorkspaceID: "w1", SiteKey: "key2", SecretHash: HashSecret("secretB")}},
	)
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if s := twice(t, c, "secret1", now); s == nil || s.ID != "s1" {
		t.Fatalf("secret1 → %v", s)
	}
	if twice(t, c, "secret2", now) != nil || twice(t, c, "secret", now) != nil || twice(t, c, "", now) != nil {
		t.Fatal("a secret that is not a site's matched")
	}
	if c.siteSecrets.get("secret1") == nil {
		t.Fatal("a matched secret was not cached")
	}

	// Rotation with a grace period: the old secret (cached in c) works in
	// the new version until the grace ends, the new one at once; the old
	// version is unchanged.
	c2, errs := apply(t, c, &RotateSiteSecret{WorkspaceID: "w1", ID: "s1", NewHash: HashSecret("secret2"), GraceUntil: now.Add(time.Hour)})
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	// (checked before secret2 is looked up: two secrets may share a slot
	// of the cache, and the later one then takes it)
	if twice(t, c2, "secret1", now) == nil {
		t.Fatal("during the grace period the old secret works")
	}
	if c2.siteSecrets.get("secret1") == nil || !c2.siteSecrets.get("secret1").prev {
		t.Fatal("the rotated-out secret is cached as the previous one")
	}
	if twice(t, c2, "secret2", now) == nil {
		t.Fatal("during the grace period the new secret works")
	}
	if twice(t, c2, "secret1", now.Add(time.Hour)) != nil || twice(t, c2, "secret1", now.Add(2*time.Hour)) != nil {
		t.Fatal("a cached rotated-out secret outlived its grace period")
	}
	if twice(t, c2, "secret1", now) == nil {
		t.Fatal("before the grace ends the old secret still works")
	}
	if twice(t, c, "secret2", now) != nil || twice(t, c, "secret1", now.Add(2*time.Hour)) == nil {
		t.Fatal("an older catalog version changed")
	}

	// A second rotation drops the first secret at once; a rotation without
	// grace (revocation) drops the current one at once, cached or not.
	c3, errs := apply(t, c2, &RotateSiteSecret{WorkspaceID: "w1", ID: "s1", NewHash: HashSecret("secret3"), GraceUntil: now.Add(time.Hour)})
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	if twice(t, c3, "secret1", now) != nil || twice(t, c3, "secret2", now) == nil || twice(t, c3, "secret3", now) == nil {
		t.Fatal("after a second rotation only the last two secrets work")
	}
	c4, errs := apply(t, c3, &RotateSiteSecret{WorkspaceID: "w1", ID: "s1", NewHash: HashSecret("secret4")})
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	if twice(t, c4, "secret3", now) != nil || twice(t, c4, "secret2", now) != nil || twice(t, c4, "secret4", now) == nil {
		t.Fatal("a rotation without grace revokes the previous secret at once")
	}

	// Deletion: the site's secret (cached in c4) stops working.
	if twice(t, c4, "secretB", now) == nil {
		t.Fatal("site s2")
	}
	c5, errs := apply(t, c4, &DeleteSite{WorkspaceID: "w1", ID: "s2"})
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	if twice(t, c5, "secretB", now) != nil || twice(t, c4, "secretB", now) == nil {
		t.Fatal("a deleted site's secret still works, or the old version changed")
	}
	// An update is seen: the cached site is the version's own.
	name := "renamed"
	c6, errs := apply(t, c5, &UpdateSite{WorkspaceID: "w1", ID: "s1", Patch: SitePatch{Name: &name}})
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	if s := twice(t, c6, "secret4", now); s == nil || s.Name != "renamed" || c5.SiteBySecret("secret4", now).Name == "renamed" {
		t.Fatal("the cached site is not the version's")
	}
}

func TestSecretCacheMobileApps(t *testing.T) {
	c, errs := apply(t, Empty(),
		&CreateWorkspace{Workspace: Workspace{ID: "w1", Name: "acme"}},
		&CreateMobileApp{App: MobileApp{ID: "m1", WorkspaceID: "w1", Platform: "ios", AppID: "com.a", SecretHash: HashSecret("ms1")}},
	)
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	for range 2 {
		if a := c.AppBySecret("ms1"); a == nil || a.ID != "m1" || c.AppBySecret("ms2") != nil {
			t.Fatal("app lookup")
		}
	}
	c2, errs := apply(t, c, &DeleteMobileApp{WorkspaceID: "w1", ID: "m1"})
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	if c2.AppBySecret("ms1") != nil || c.AppBySecret("ms1") == nil {
		t.Fatal("a deleted app's secret still works, or the old version changed")
	}
	// A site secret is not an app secret, nor the reverse.
	if c.SiteBySecret("ms1", time.Now()) != nil {
		t.Fatal("an app secret matched a site")
	}
}

// Only secrets that matched are kept: an attacker presenting random
// secrets cannot grow the cache, and the table never outgrows its bound.
func TestSecretCacheKeepsOnlyMatchedSecrets(t *testing.T) {
	tx := Begin(Empty())
	if _, err := (&CreateWorkspace{Workspace: Workspace{ID: "w1", Name: "acme"}}).Apply(tx); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		s := Site{ID: "s" + strconv.Itoa(i), WorkspaceID: "w1", SiteKey: "k" + strconv.Itoa(i), SecretHash: HashSecret("secret" + strconv.Itoa(i))}
		if _, err := (&CreateSite{Site: s}).Apply(tx); err != nil {
			t.Fatal(err)
		}
	}
	if tx.Catalog().siteSecrets != nil {
		t.Fatal("a transaction's working copy shares its parent's cache")
	}
	c := tx.Commit(7)
	now := time.Now()
	for i := range 10000 {
		if c.SiteBySecret("random-"+strconv.Itoa(i), now) != nil {
			t.Fatal("a random secret matched")
		}
	}
	if n := cachedSecrets(c.siteSecrets); n != 0 {
		t.Fatalf("%d unmatched secrets cached", n)
	}
	for i := range 3 {
		c.SiteBySecret("secret"+strconv.Itoa(i), now)
	}
	if n := cachedSecrets(c.siteSecrets); n > 3 || n == 0 {
		t.Fatalf("%d secrets cached for 3 matched", n)
	}
	if big := newSecretCache(1 << 20); len(big.slots) != maxSecretSlots {
		t.Fatalf("table of %d slots", len(big.slots))
	}
}

// BenchmarkSiteBySecret: a matched secret from the cache, and the same
// lookup without it (SHA-256 and the index, the path before the cache).
func BenchmarkSiteBySecret(b *testing.B) {
	const secret = "sk_live_0123456789abcdef0123456789abcdef"
	c, _ := apply(&testing.T{}, Empty(),
		&CreateWorkspace{Workspace: Workspace{ID: "w1", Name: "acme"}},
		&CreateSite{Site: Site{ID: "s1", WorkspaceID: "w1", SiteKey: "key1", SecretHash: HashSecret(secret)}},
	)
	uncached := *c
	uncached.siteSecrets = nil
	now := time.Now()
	for _, bc := range []struct {
		name string
		c    *Catalog
	}{{"cached", c}, {"no-cache", &uncached}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if bc.c.SiteBySecret(secret, now) == nil {
					b.Fatal("no site")
				}
			}
		})
	}
}
