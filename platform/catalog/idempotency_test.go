package catalog

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
)

func applyIdem(t *testing.T, c *Catalog, cmd Command) (*Catalog, any, error) {
	t.Helper()
	body, err := Encode(cmd)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := Decode(cmd.Kind(), body)
	if err != nil {
		t.Fatal(err)
	}
	tx := Begin(c)
	v, err := dec.Apply(tx)
	return tx.Commit(c.Index + 1), v, err
}

func idemSite(t *testing.T, key, siteID string, fp Hash, at time.Time) *IdempotentCreate {
	t.Helper()
	cmd, err := NewIdempotentCreate("w1", key, fp, []byte("sealed"), at,
		&CreateSite{Site: Site{ID: siteID, WorkspaceID: "w1", SiteKey: "pk-" + siteID, SecretHash: HashSecret("s-" + siteID)}})
	if err != nil {
		t.Fatal(err)
	}
	return cmd
}

func TestAnIdempotentCreateRunsOncePerKey(t *testing.T) {
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	c, _ := apply(t, Empty(), &CreateWorkspace{Workspace: Workspace{ID: "w1", Name: "acme"}})
	fp, other := HashSecret("request"), HashSecret("another request")
	tests := []struct {
		name     string
		cmd      *IdempotentCreate
		replayed bool
		err      error
		sites    int
	}{
		{"the first create creates and keeps the key", idemSite(t, "k1", "s1", fp, at), false, nil, 1},
		{"the same key and request answers the first record", idemSite(t, "k1", "s2", fp, at.Add(time.Hour)), true, nil, 1},
		{"the same key with another request is refused", idemSite(t, "k1", "s3", other, at.Add(2*time.Hour)), false, ErrIdempotencyKeyReused, 1},
		{"another key creates", idemSite(t, "k2", "s4", fp, at.Add(3*time.Hour)), false, nil, 2},
		{"a key past its retention creates again", idemSite(t, "k1", "s5", fp, at.Add(IdempotencyRetention)), false, nil, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			next, v, err := applyIdem(t, c, tc.cmd)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			c = next
			if len(c.Sites) != tc.sites {
				t.Fatalf("%d sites, want %d", len(c.Sites), tc.sites)
			}
			if err != nil {
				return
			}
			r := v.(*IdempotentResult)
			if r.Replayed != tc.replayed {
				t.Fatalf("replayed = %v", r.Replayed)
			}
			if r.Replayed {
				var s Site
				if err := json.Unmarshal(r.Record, &s); err != nil || s.ID != "s1" || string(r.Sealed) != "sealed" {
					t.Fatalf("replay: %+v %q %v", s, r.Sealed, err)
				}
			} else if _, ok := r.Value.(*Site); !ok {
				t.Fatalf("the first create's result is %T", r.Value)
			}
		})
	}
}

func TestIdempotencyKeysAreBoundedPerWorkspaceAndGoWithIt(t *testing.T) {
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	c, _ := apply(t, Empty(), &CreateWorkspace{Workspace: Workspace{ID: "w1", Name: "acme"}})
	// A workspace full of keys (the creates themselves would meet the
	// workspace's site cap first), one of them expired.
	tx := Begin(c)
	keys := tx.idempotencyKeysOf("w1")
	for i := 0; i < MaxIdempotencyKeysPerWorkspace; i++ {
		keys[fmt.Sprintf("k%d", i)] = &IdempotencyRecord{Expires: at.Add(IdempotencyRetention + time.Duration(i)*time.Second)}
	}
	keys["k7"].Expires = at
	c = tx.Commit(2)
	for i, k := range []string{"new-1", "new-2"} {
		var err error
		if c, _, err = applyIdem(t, c, idemSite(t, k, k, HashSecret("r"), at.Add(time.Duration(i)*time.Second))); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.IdempotencyKeyCount("w1"); n != MaxIdempotencyKeysPerWorkspace {
		t.Fatalf("%d keys, want the cap %d", n, MaxIdempotencyKeysPerWorkspace)
	}
	got := c.IdempotencyKeys["w1"]
	if got["k7"] != nil || got["k0"] != nil || got["k1"] == nil || got["new-1"] == nil || got["new-2"] == nil {
		t.Fatal("not the expired key and then the oldest were dropped")
	}
	c, _ = apply(t, c, &DeleteWorkspace{ID: "w1"})
	if c.IdempotencyKeyCount("w1") != 0 {
		t.Fatal("a deleted workspace kept its idempotency keys")
	}
	// A snapshot keeps them.
	c, _ = apply(t, c, &CreateWorkspace{Workspace: Workspace{ID: "w1", Name: "acme"}}, idemSite(t, "k", "s", HashSecret("r"), at))
	b, err := c.MarshalSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	back, err := UnmarshalSnapshot(b)
	if err != nil || back.IdempotencyKeys["w1"]["k"] == nil {
		t.Fatalf("restored snapshot lost the key: %v", err)
	}
}

func TestAKnownIdempotentCreateIsFoundUntilItExpires(t *testing.T) {
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	c, _ := apply(t, Empty(), &CreateWorkspace{Workspace: Workspace{ID: "w1", Name: "acme"}})
	fp := HashSecret("request")
	c, _, err := applyIdem(t, c, idemSite(t, "k1", "s1", fp, at))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		ws, key     string
		fingerprint Hash
		now         time.Time
		found       bool
		err         error
	}{
		{"the same request within the retention finds the record", "w1", "k1", fp, at.Add(time.Hour), true, nil},
		{"another request with the key is refused", "w1", "k1", HashSecret("another"), at.Add(time.Hour), false, ErrIdempotencyKeyReused},
		{"an unknown key finds nothing", "w1", "k2", fp, at, false, nil},
		{"the key in another workspace finds nothing", "w2", "k1", fp, at, false, nil},
		{"an expired key finds nothing", "w1", "k1", fp, at.Add(IdempotencyRetention), false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := c.KnownIdempotentCreate(tc.ws, tc.key, tc.fingerprint, tc.now)
			if !errors.Is(err, tc.err) || (r != nil) != tc.found {
				t.Fatalf("got %v, %v; want found %v, %v", r, err, tc.found, tc.err)
			}
			if r != nil && string(r.Sealed) != "sealed" {
				t.Fatalf("the record kept %q", r.Sealed)
			}
		})
	}
}
