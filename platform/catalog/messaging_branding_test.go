package catalog

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestMessagingSettingsAndBrandingProfiles(t *testing.T) {
	c, err := mustApplyTraffic(t, Empty(),
		&CreateWorkspace{Workspace: Workspace{ID: "w1"}},
		&CreateWorkspace{Workspace: Workspace{ID: "w2"}},
		&PutMessagingSettings{Settings: MessagingSettings{WorkspaceID: "w1", Keys: []MessagingKey{{Sealed: []byte("s")}}}},
		&PutBrandingProfile{Profile: BrandingProfile{ID: "p1", WorkspaceID: "w1", Name: "Acme"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		cmd  Command
		want error
	}{
		{"messaging settings of an unknown workspace", &PutMessagingSettings{Settings: MessagingSettings{WorkspaceID: "nope"}}, ErrNotFound},
		{"too many messaging keys", &PutMessagingSettings{Settings: MessagingSettings{WorkspaceID: "w1", Keys: make([]MessagingKey, MaxMessagingKeys+1)}}, ErrConflict},
		{"too many countries", &PutMessagingSettings{Settings: MessagingSettings{WorkspaceID: "w1", Policy: MessagingPolicy{BlockedCountries: make([]string, MaxMessagingCountries+1)}}}, ErrConflict},
		{"deleting absent messaging settings", &DeleteMessagingSettings{WorkspaceID: "w2"}, ErrNotFound},
		{"another workspace's profile", &PutBrandingProfile{Profile: BrandingProfile{ID: "p1", WorkspaceID: "w2", Name: "Mine"}}, ErrNotFound},
		{"a duplicate profile name", &PutBrandingProfile{Profile: BrandingProfile{ID: "p2", WorkspaceID: "w1", Name: "Acme"}}, ErrConflict},
		{"a logo over the stored limit", &PutBrandingProfile{Profile: BrandingProfile{ID: "p1", WorkspaceID: "w1", Name: "Acme",
			Logos: []BrandingLogo{{Size: 256, PNG: make([]byte, MaxBrandingLogoBytes+1)}}}}, ErrConflict},
		{"deleting another workspace's profile", &DeleteBrandingProfile{WorkspaceID: "w2", ID: "p1"}, ErrNotFound},
		{"the same name in another workspace", &PutBrandingProfile{Profile: BrandingProfile{ID: "p3", WorkspaceID: "w2", Name: "Acme"}}, nil},
	}
	for _, tc := range cases {
		_, err := mustApplyTraffic(t, c, tc.cmd)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	t.Run("profiles per workspace are capped", func(t *testing.T) {
		tx := Begin(c)
		for i := 1; i < MaxBrandingProfilesPerWorkspace; i++ {
			if _, err := (&PutBrandingProfile{Profile: BrandingProfile{ID: fmt.Sprint("x", i), WorkspaceID: "w1", Name: fmt.Sprint("n", i)}}).Apply(tx); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := (&PutBrandingProfile{Profile: BrandingProfile{ID: "over", WorkspaceID: "w1", Name: "over"}}).Apply(tx); !errors.Is(err, ErrConflict) {
			t.Fatalf("profile over the cap: %v", err)
		}
	})
	t.Run("deleting the workspace deletes both", func(t *testing.T) {
		c2, err := mustApplyTraffic(t, c, &DeleteWorkspace{ID: "w1"})
		if err != nil {
			t.Fatal(err)
		}
		if c2.Messaging["w1"] != nil || c2.BrandingProfiles["p1"] != nil {
			t.Fatal("records survived their workspace")
		}
	})
	t.Run("snapshots and commands round-trip", func(t *testing.T) {
		b, err := c.MarshalSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		r, err := UnmarshalSnapshot(b)
		if err != nil || r.Messaging["w1"] == nil || r.BrandingProfiles["p1"].Name != "Acme" {
			t.Fatalf("restore: %v", err)
		}
		for kind, cmd := range map[string]Command{
			"messaging_settings.put": &PutMessagingSettings{Settings: *c.Messaging["w1"]}, "messaging_settings.delete": &DeleteMessagingSettings{WorkspaceID: "w1"},
			"branding_profile.put": &PutBrandingProfile{Profile: *c.BrandingProfiles["p1"]}, "branding_profile.delete": &DeleteBrandingProfile{WorkspaceID: "w1", ID: "p1"},
		} {
			b, err := Encode(cmd)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := Decode(kind, b); err != nil || got.Kind() != kind {
				t.Fatalf("%s: %v", kind, err)
			}
		}
	})
}

// A site or mobile app names a profile of its own workspace; a profile in
// use is not deleted; entries written before the field existed decode and
// apply as before (the field is absent, the site shows no profile).
func TestSitesAndAppsNameABrandingProfile(t *testing.T) {
	c, err := mustApplyTraffic(t, Empty(),
		&CreateWorkspace{Workspace: Workspace{ID: "w1"}},
		&CreateWorkspace{Workspace: Workspace{ID: "w2"}},
		&PutBrandingProfile{Profile: BrandingProfile{ID: "p1", WorkspaceID: "w1", Name: "Acme"}},
		&PutBrandingProfile{Profile: BrandingProfile{ID: "p2", WorkspaceID: "w2", Name: "Other"}},
		&CreateSite{Site: Site{ID: "s1", WorkspaceID: "w1", SiteKey: "k1", BrandingProfileID: "p1"}},
		&CreateSite{Site: Site{ID: "s2", WorkspaceID: "w1", SiteKey: "k2"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	if c.Sites["s1"].BrandingProfileID != "p1" || c.Sites["s2"].BrandingProfileID != "" {
		t.Fatalf("sites: %+v %+v", c.Sites["s1"], c.Sites["s2"])
	}
	p := func(s string) *string { return &s }
	cases := []struct {
		name string
		cmd  Command
		want error
	}{
		{"a site naming another workspace's profile", &CreateSite{Site: Site{ID: "s3", WorkspaceID: "w1", BrandingProfileID: "p2"}}, ErrNotFound},
		{"a site naming a missing profile", &CreateSite{Site: Site{ID: "s3", WorkspaceID: "w1", BrandingProfileID: "nope"}}, ErrNotFound},
		{"a patch to another workspace's profile", &UpdateSite{WorkspaceID: "w1", ID: "s2", Patch: SitePatch{BrandingProfileID: p("p2")}}, ErrNotFound},
		{"a patch to its own workspace's profile", &UpdateSite{WorkspaceID: "w1", ID: "s2", Patch: SitePatch{BrandingProfileID: p("p1")}}, nil},
		{"a patch removing the profile", &UpdateSite{WorkspaceID: "w1", ID: "s1", Patch: SitePatch{BrandingProfileID: p("")}}, nil},
		{"an app naming another workspace's profile", &CreateMobileApp{App: MobileApp{ID: "m1", WorkspaceID: "w1", Platform: "ios", AppID: "a", BrandingProfileID: "p2"}}, ErrNotFound},
		{"an app naming its workspace's profile", &CreateMobileApp{App: MobileApp{ID: "m1", WorkspaceID: "w1", Platform: "ios", AppID: "a", BrandingProfileID: "p1"}}, nil},
		{"deleting a profile a site shows", &DeleteBrandingProfile{WorkspaceID: "w1", ID: "p1"}, ErrConflict},
		{"deleting an unused profile", &DeleteBrandingProfile{WorkspaceID: "w2", ID: "p2"}, nil},
	}
	for _, tc := range cases {
		_, err := mustApplyTraffic(t, c, tc.cmd)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	t.Run("a patch leaving the field out keeps it", func(t *testing.T) {
		c2, err := mustApplyTraffic(t, c, &UpdateSite{WorkspaceID: "w1", ID: "s1", Patch: SitePatch{Name: p("renamed")}})
		if err != nil || c2.Sites["s1"].BrandingProfileID != "p1" {
			t.Fatalf("%v %+v", err, c2.Sites["s1"])
		}
	})
	t.Run("in use until no site or app names it", func(t *testing.T) {
		c2, err := mustApplyTraffic(t, c,
			&CreateMobileApp{App: MobileApp{ID: "m1", WorkspaceID: "w1", Platform: "ios", AppID: "a", BrandingProfileID: "p1"}},
			&UpdateSite{WorkspaceID: "w1", ID: "s1", Patch: SitePatch{BrandingProfileID: p("")}})
		if err != nil {
			t.Fatal(err)
		}
		if use := BrandingProfileUse(c2, "w1", "p1"); use != "mobile app m1" {
			t.Fatalf("use: %q", use)
		}
		c3, err := mustApplyTraffic(t, c2, &DeleteMobileApp{WorkspaceID: "w1", ID: "m1"}, &DeleteBrandingProfile{WorkspaceID: "w1", ID: "p1"})
		if err != nil || c3.BrandingProfiles["p1"] != nil {
			t.Fatalf("delete after release: %v", err)
		}
	})
	t.Run("an old site entry and a new one decode", func(t *testing.T) {
		old, err := Decode("site.update", []byte(`{"workspace_id":"w1","site_id":"s1","patch":{"name":"x"}}`))
		if err != nil {
			t.Fatal(err)
		}
		c2, err := mustApplyTraffic(t, c, old)
		if err != nil || c2.Sites["s1"].BrandingProfileID != "p1" {
			t.Fatalf("old patch: %v %+v", err, c2.Sites["s1"])
		}
		b, err := Encode(&CreateSite{Site: *c.Sites["s1"]})
		if err != nil || !strings.Contains(string(b), `"branding_profile_id":"p1"`) {
			t.Fatalf("encode: %v %s", err, b)
		}
		// a patch clearing the profile survives the log's encoding
		// (omitempty would drop the "" of the pointer)
		b, err = Encode(&UpdateSite{WorkspaceID: "w1", ID: "s1", Patch: SitePatch{BrandingProfileID: p("")}})
		if err != nil {
			t.Fatal(err)
		}
		clear, err := Decode("site.update", b)
		if err != nil {
			t.Fatal(err)
		}
		if c2, err := mustApplyTraffic(t, c, clear); err != nil || c2.Sites["s1"].BrandingProfileID != "" {
			t.Fatalf("a decoded clearing patch: %v %s", err, b)
		}
		b, _ = Encode(&CreateSite{Site: *c.Sites["s2"]})
		if strings.Contains(string(b), "branding_profile_id") {
			t.Fatalf("a site without a profile writes the field: %s", b)
		}
	})
}
