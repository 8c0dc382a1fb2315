package catalog

import (
	"testing"
	"time"
)

func TestARotatedKeySignsOnlyOnceItIsActive(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	old := &SigningKey{ID: "old", Purpose: KeyLive, CreatedAt: t0, ActiveFrom: t0}
	rotated := &SigningKey{ID: "new", Purpose: KeyLive, CreatedAt: t0.Add(time.Hour), ActiveFrom: t0.Add(time.Hour + KeyActivationDelay)}
	retired := &SigningKey{ID: "gone", Purpose: KeyLive, CreatedAt: t0.Add(2 * time.Hour), Retired: true}
	c := &Catalog{Keys: []*SigningKey{old, rotated, retired}}
	tests := []struct {
		name string
		now  time.Time
		want string
	}{
		{"before the rotation the old key signs", t0.Add(time.Minute), "old"},
		{"right after the rotation the old key still signs", t0.Add(time.Hour + time.Second), "old"},
		{"once the delay passed the new key signs", t0.Add(time.Hour + KeyActivationDelay), "new"},
	}
	for _, tc := range tests {
		if got := c.SigningKeyAt(KeyLive, tc.now); got == nil || got.ID != tc.want {
			t.Errorf("%s: got %v, want %s", tc.name, got, tc.want)
		}
	}
	fresh := &Catalog{Keys: []*SigningKey{{ID: "first", Purpose: KeyLive, CreatedAt: t0, ActiveFrom: t0.Add(time.Hour)}}}
	if got := fresh.SigningKeyAt(KeyLive, t0); got == nil || got.ID != "first" {
		t.Errorf("a cluster whose only key is not active yet has signing key %v, want first", got)
	}
}
