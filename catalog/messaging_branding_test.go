package catalog

import (
	"errors"
	"fmt"
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
