package main

import (
	"bytes"
	"fmt"
	"io"

	"github.com/go-json-experiment/json"
)

// trust-policies: the Trust API's per-workspace rules (CEL conditions).
//
//	trustctl trust-policies create --workspace <id> --name big-payments \
//	    --condition 'request.transaction_amount >= 500000' --reason-code high_value --outcome review [--mode enforce]
//	trustctl trust-policies list --workspace <id>      (with today's match counts and the built-in rules)
//	trustctl trust-policies update <id> --workspace <id> --name … --condition … --reason-code … --outcome … --mode enforce
//	trustctl trust-policies get|delete <id> --workspace <id>

var trustPolicyCols = []string{"trust_policy_id", "name", "mode", "outcome", "reason_code", "matches_today", "condition"}

// trustPolicyVerb prints the list as two tables; handled is false for the
// generic verbs (create, get, update, delete), which run() serves: an
// update replaces a policy whole.
func (o *options) trustPolicyVerb(noun, verb, coll string, res resource, out io.Writer) (handled bool, err error) {
	if noun != "trust-policies" || verb != "list" || o.asJSON {
		return false, nil
	}
	// The answer holds two lists and a flag: print each.
	var buf bytes.Buffer
	j := *o
	j.asJSON = true
	if err := j.call("GET", coll, nil, res, &buf); err != nil {
		return true, err
	}
	var l struct {
		Policies       []any `json:"policies"`
		BuiltinsActive bool  `json:"builtins_active"`
		Builtins       []any `json:"builtins"`
	}
	if err := json.Unmarshal(buf.Bytes(), &l); err != nil {
		return true, err
	}
	if err := table(out, map[string]any{"policies": l.Policies}, trustPolicyCols); err != nil {
		return true, err
	}
	state := "inactive: the workspace enforces policies of its own"
	if l.BuiltinsActive {
		state = "active: the workspace enforces no policy of its own"
	}
	fmt.Fprintf(out, "\nbuilt-in rules (%s):\n", state)
	return true, table(out, map[string]any{"builtins": l.Builtins}, trustPolicyCols[1:])
}
