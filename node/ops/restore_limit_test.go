package ops

import (
	"testing"

	kernel "github.com/trustd/trustd/platform/http"
)

func TestARestoreAcceptsTheLargestBodyAnotherRouteDoes(t *testing.T) {
	restore := func(areas []kernel.Area) int {
		for _, a := range areas {
			for _, r := range a.Routes {
				if r.ID == restoreID {
					return r.MaxBody
				}
			}
		}
		t.Fatal("no restore route")
		return 0
	}
	for _, tc := range []struct {
		name   string
		bodies []int
		want   int
	}{
		{"the largest other route's limit is the restore's", []int{0, 14 << 20, 1 << 20}, 14 << 20},
		{"with no raised route the restore keeps the server's default", []int{0, 0}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var other []kernel.Route
			for i, b := range tc.bodies {
				other = append(other, kernel.Route{ID: "op" + string(rune('a'+i)), MaxBody: b})
			}
			areas := append([]kernel.Area{{Name: "other", Routes: other}}, Areas(Deps{})...)
			FitRestoreLimit(areas)
			if got := restore(areas); got != tc.want {
				t.Fatalf("restore accepts %d bytes, want %d", got, tc.want)
			}
		})
	}
}
