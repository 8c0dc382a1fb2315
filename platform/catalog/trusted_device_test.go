package catalog

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestTrustedDevices(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	c, err := mustApplyTraffic(t, Empty(),
		&CreateWorkspace{Workspace: Workspace{ID: "w1"}},
		&CreateWorkspace{Workspace: Workspace{ID: "w2"}},
		&TrustDevice{WorkspaceID: "w1", SubjectHash: "s1", DeviceHash: "d1", Label: "phone", At: t0},
	)
	if err != nil {
		t.Fatal(err)
	}
	trust := func(ws, s, d string, at time.Time) *TrustDevice {
		return &TrustDevice{WorkspaceID: ws, SubjectHash: s, DeviceHash: d, Label: "l", At: at}
	}
	t.Run("a trusted device is found for its subject and workspace only", func(t *testing.T) {
		if c.TrustedDevice("w1", "s1", "d1", t0) == nil {
			t.Fatal("not trusted")
		}
		for _, q := range [][3]string{{"w2", "s1", "d1"}, {"w1", "s2", "d1"}, {"w1", "s1", "d2"}} {
			if c.TrustedDevice(q[0], q[1], q[2], t0) != nil {
				t.Fatalf("%v is trusted", q)
			}
		}
		if c.TrustedDevice("w1", "s1", "d1", t0.Add(TrustedDeviceRetention)) != nil {
			t.Fatal("a trust outlived its retention")
		}
	})
	cases := []struct {
		name string
		cmd  Command
		want error
	}{
		{"an unknown workspace", trust("nope", "s", "d", t0), ErrNotFound},
		{"an empty hash", trust("w1", "", "d", t0), ErrConflict},
		{"a label too long", &TrustDevice{WorkspaceID: "w1", SubjectHash: "s", DeviceHash: "d", Label: string(make([]byte, MaxTrustedDeviceLabel+1)), At: t0}, ErrConflict},
		{"a refresh of the same device", trust("w1", "s1", "d1", t0), nil},
		{"a revoke in an unknown workspace", &RevokeDevice{WorkspaceID: "nope", SubjectHash: "s", DeviceHash: "d"}, ErrNotFound},
	}
	for _, tc := range cases {
		_, err := mustApplyTraffic(t, c, tc.cmd)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	t.Run("a subject holds at most its cap; a lapsed trust frees a place", func(t *testing.T) {
		tx := Begin(c)
		for i := 1; i < MaxTrustedDevicesPerSubject; i++ {
			if _, err := trust("w1", "s1", fmt.Sprint("d", i+1), t0).Apply(tx); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := trust("w1", "s1", "over", t0).Apply(tx); !errors.Is(err, ErrTrustedDevicesFull) {
			t.Fatalf("over the subject cap: %v", err)
		}
		if _, err := trust("w1", "s1", "d1", t0.Add(time.Hour)).Apply(tx); err != nil {
			t.Fatalf("refreshing a device at the cap: %v", err)
		}
		if _, err := trust("w1", "s2", "other", t0).Apply(tx); err != nil {
			t.Fatalf("another subject is not limited by s1: %v", err)
		}
		later := t0.Add(TrustedDeviceRetention).Add(time.Minute)
		if _, err := trust("w1", "s1", "new", later).Apply(tx); err != nil {
			t.Fatalf("after the others lapsed: %v", err)
		}
		c2 := tx.Commit(c.Index + 1)
		if n := c2.TrustedDeviceCount("w1"); n != 3 {
			t.Fatalf("count %d after pruning, want 3 (s1's d1 refreshed, s1's new, s2's other)", n)
		}
		if c.TrustedDeviceCount("w1") != 1 || c.TrustedDevice("w1", "s1", "d2", t0) != nil {
			t.Fatal("the previous catalog version changed")
		}
	})
	t.Run("revoke withdraws the trust and is idempotent", func(t *testing.T) {
		tx := Begin(c)
		r, err := (&RevokeDevice{WorkspaceID: "w1", SubjectHash: "s1", DeviceHash: "d1", At: t0}).Apply(tx)
		if err != nil || !r.(*RevokeResult).WasTrusted {
			t.Fatalf("%v %v", r, err)
		}
		r, err = (&RevokeDevice{WorkspaceID: "w1", SubjectHash: "s1", DeviceHash: "d1", At: t0}).Apply(tx)
		if err != nil || r.(*RevokeResult).WasTrusted {
			t.Fatalf("second revoke: %v %v", r, err)
		}
		c2 := tx.Commit(c.Index + 1)
		if c2.TrustedDevice("w1", "s1", "d1", t0) != nil || c2.TrustedDeviceCount("w1") != 0 {
			t.Fatal("still trusted")
		}
		if c.TrustedDevice("w1", "s1", "d1", t0) == nil {
			t.Fatal("the previous catalog version changed")
		}
	})
	t.Run("the workspace cap counts every subject", func(t *testing.T) {
		tx := Begin(c)
		for i := 1; i < MaxTrustedDevicesPerWorkspace; i++ {
			if _, err := trust("w1", fmt.Sprint("s", i/10), fmt.Sprint("d", i), t0).Apply(tx); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := trust("w1", "fresh", "d", t0).Apply(tx); !errors.Is(err, ErrTrustedDevicesFull) {
			t.Fatalf("over the workspace cap: %v", err)
		}
		if _, err := trust("w2", "fresh", "d", t0).Apply(tx); err != nil {
			t.Fatalf("another workspace: %v", err)
		}
	})
	t.Run("snapshots and the wire keep trusted devices", func(t *testing.T) {
		b, err := c.MarshalSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		r, err := UnmarshalSnapshot(b)
		if err != nil {
			t.Fatal(err)
		}
		if d := r.TrustedDevice("w1", "s1", "d1", t0); d == nil || d.Label != "phone" {
			t.Fatalf("restored %+v", d)
		}
		for _, cmd := range []Command{trust("w1", "s", "d", t0), &RevokeDevice{WorkspaceID: "w1", SubjectHash: "s", DeviceHash: "d", At: t0}} {
			enc, err := Encode(cmd)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Decode(cmd.Kind(), enc); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("deleting the workspace deletes its trusted devices", func(t *testing.T) {
		c2, err := mustApplyTraffic(t, c, &DeleteWorkspace{ID: "w1"})
		if err != nil {
			t.Fatal(err)
		}
		if c2.TrustedDeviceCount("w1") != 0 || c2.TrustedDevices["w1"] != nil {
			t.Fatal("trusted devices survived their workspace")
		}
	})
}
