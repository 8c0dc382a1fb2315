package http

import (
	"reflect"
	"strings"
	"sync"
)

// Decision outcomes for the cluster-wide summary. A decision travels in a
// 200 answer (a throttled rate-limit check, a siteverify that failed, a
// trust decision to block), so the answer's status class cannot tell it.
// A handler names its outcome with Call.decided; c.ok does it for any
// result with a string field tagged json:"decision". The names are a fixed
// set, so a decision string can never grow the counters: an unknown one
// counts as "other".
var outcomeNames = [...]string{"", "allow", "throttle", "reject", "deny", "block", "challenge", "verify",
	"review", "delay", "approval_required", "verified", "rejected", "success", "failure", "other"}

const numOutcomes = len(outcomeNames)

var outcomeIndex = func() map[string]uint8 {
	m := make(map[string]uint8, numOutcomes)
	for i, n := range outcomeNames {
		m[n] = uint8(i)
	}
	return m
}()

// decided records the decision this answer carries.
func (c *Call) decided(name string) {
	i, ok := outcomeIndex[name]
	if !ok || i == 0 {
		i = uint8(numOutcomes - 1)
	}
	c.outcome = i
}

// decisionFields caches, per result type, the index of its string field
// tagged json:"decision" (-1: none).
var decisionFields sync.Map

// decisionOf reads the decision field of a result (a struct or a pointer
// to one), if it has one.
func decisionOf(v any) (string, bool) {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return "", false
		}
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct {
		return "", false
	}
	t := rv.Type()
	idx, ok := decisionFields.Load(t)
	if !ok {
		i := -1
		for f := range t.NumField() {
			sf := t.Field(f)
			if name, _, _ := strings.Cut(sf.Tag.Get("json"), ","); name == "decision" && sf.Type.Kind() == reflect.String {
				i = f
				break
			}
		}
		idx, _ = decisionFields.LoadOrStore(t, i)
	}
	if i := idx.(int); i >= 0 {
		return rv.Field(i).String(), true
	}
	return "", false
}

// A siteverify's outcomes, also without a map lookup.
var outcomeSuccess, outcomeFailure = outcomeIndex["success"], outcomeIndex["failure"]
