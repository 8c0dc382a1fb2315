package clustertest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

type keyView struct {
	KeyID   string `json:"key_id"`
	Purpose string `json:"purpose"`
	State   string `json:"state"`
}

func keyStates(t *testing.T, c *Cluster, i int) map[string]string {
	t.Helper()
	st, b, err := c.Do(i, "GET", "/admin/v1/signing-keys", nil)
	if err != nil || st != 200 {
		t.Fatalf("list keys on node-%d: %d %s %v", i, st, b, err)
	}
	var l struct {
		Keys []keyView `json:"keys"`
	}
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range l.Keys {
		if k.Purpose == "live" {
			out[k.KeyID] = k.State
		}
	}
	return out
}

// TestRotatedKeysArePublishedEverywhereBeforeTheySign rotates the live
// signing key through one node of three: the new key signs on every node,
// the old one only verifies, and a token minted before the rotation still
// verifies through every node.
func TestRotatedKeysArePublishedEverywhereBeforeTheySign(t *testing.T) {
	c := Start(t, 3)
	s := setupSite(t, c)
	before := c.mint(t, 1, s)
	old := keyStates(t, c, 0)
	if len(old) != 1 {
		t.Fatalf("live keys before rotation: %v", old)
	}
	st, b, err := c.Do(2, "POST", "/admin/v1/signing-keys/rotate", []byte(`{"purpose":"live"}`))
	if err != nil || st != 200 {
		t.Fatalf("rotate: %d %s %v", st, b, err)
	}
	var rotated keyView
	if err := json.Unmarshal(b, &rotated); err != nil || rotated.State != "signing" {
		t.Fatalf("rotate answered %s", b)
	}
	for _, i := range c.Live() {
		Eventually(t, 5*time.Second, func() error {
			states := keyStates(t, c, i)
			if states[rotated.KeyID] != "signing" {
				return fmt.Errorf("node-%d: new key %s is %q", i, rotated.KeyID, states[rotated.KeyID])
			}
			for id := range old {
				if states[id] != "verify_only" {
					return fmt.Errorf("node-%d: old key %s is %q", i, id, states[id])
				}
			}
			return nil
		})
	}
	// The token signed by the old key verifies (once) through any node.
	if _, v, err := Siteverify(c.Nodes[0].APIURL(), s.secret, before, ""); err != nil || !v.Success {
		t.Fatalf("a token signed before the rotation: %+v %v", v, err)
	}
	// New tokens verify everywhere too.
	for _, i := range c.Live() {
		tok := c.mint(t, i, s)
		if _, v, err := Siteverify(c.Nodes[(i+1)%3].APIURL(), s.secret, tok, ""); err != nil || !v.Success {
			t.Fatalf("a token minted after the rotation through node-%d: %+v %v", i, v, err)
		}
	}
	if st, b, _ := c.Do(0, "POST", "/admin/v1/signing-keys/rotate", []byte(`{"purpose":"other"}`)); st != 400 {
		t.Fatalf("rotate of an unknown purpose = %d %s", st, b)
	}
}
