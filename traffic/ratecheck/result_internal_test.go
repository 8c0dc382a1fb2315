package ratecheck

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/trustd/trustd/platform/lib/ratelimit"
)

// The ready fragments of the answer are the stretches the answer was
// written with one value at a time, for every combination of values.
func TestAnswerFragmentsAreTheStretches(t *testing.T) {
	ds := []ratelimit.Decision{ratelimit.Allow, ratelimit.Throttle, ratelimit.Reject}
	for _, rec := range ds {
		for _, d := range ds {
			var b []byte
			b = append(b, `","allowed":`...)
			b = strconv.AppendBool(b, d == ratelimit.Allow)
			b = append(b, `,"recommended_decision":"`...)
			b = append(b, rec.String()...)
			b = append(b, `","decision":"`...)
			b = append(b, d.String()...)
			b = append(b, `","retry_after_ms":`...)
			if answerMid[rec][d] != string(b) {
				t.Errorf("answer, recommended %s, applied %s: %q, want %q", rec, d, answerMid[rec][d], b)
			}
			for _, enforced := range []bool{false, true} {
				b = append(b[:0], `,"enforced":`...)
				b = strconv.AppendBool(b, enforced)
				b = append(b, `,"recommended_decision":"`...)
				b = append(b, rec.String()...)
				b = append(b, `","decision":"`...)
				b = append(b, d.String()...)
				b = append(b, `","cost":`...)
				if got := outcomeMid[boolIndex(enforced)][rec][d]; got != string(b) {
					t.Errorf("policy, enforced %v, recommended %s, decision %s: %q, want %q", enforced, rec, d, got, b)
				}
			}
		}
	}
	for _, refunded := range []bool{false, true} {
		want := `,"refunded":` + strconv.FormatBool(refunded) + `,"reason_codes":`
		if got := refundedFragment[boolIndex(refunded)]; got != want {
			t.Errorf("refunded %v: %q, want %q", refunded, got, want)
		}
	}
}

// A decision id is a random version-4 UUID in its canonical text form,
// appended after what the buffer held.
func TestDecisionIDIsAVersion4UUID(t *testing.T) {
	v4 := regexp.MustCompile(`^x[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := string(appendUUID([]byte("x")))
		if !v4.MatchString(id) {
			t.Fatalf("%q is not a version-4 UUID after the prefix", id)
		}
		if seen[id] {
			t.Fatalf("%q twice", id)
		}
		seen[id] = true
	}
}
