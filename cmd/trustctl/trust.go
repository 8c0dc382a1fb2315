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

func (o *options) trustPolicies(verb string, rest []string, out io.Writer) error {
	if o.workspace == "" {
		return fmt.Errorf("trust-policies needs --workspace <id>")
	}
	res := resource{cols: trustPolicyCols}
	coll := "/admin/v1/workspaces/" + o.workspace + "/trust-policies"
	one := func() (string, error) {
		if len(rest) != 1 {
			return "", fmt.Errorf("trust-policies %s needs one id", verb)
		}
		return coll + "/" + rest[0], nil
	}
	switch verb {
	case "create":
		body, err := o.body(res)
		if err != nil {
			return err
		}
		return o.call("POST", coll, body, res, out)
	case "list":
		if o.asJSON {
			return o.call("GET", coll, nil, res, out)
		}
		// The answer holds two lists and a flag: print each.
		var buf bytes.Buffer
		j := *o
		j.asJSON = true
		if err := j.call("GET", coll, nil, res, &buf); err != nil {
			return err
		}
		var l struct {
			Policies       []any `json:"policies"`
			BuiltinsActive bool  `json:"builtins_active"`
			Builtins       []any `json:"builtins"`
		}
		if err := json.Unmarshal(buf.Bytes(), &l); err != nil {
			return err
		}
		if err := table(out, map[string]any{"policies": l.Policies}, trustPolicyCols); err != nil {
			return err
		}
		state := "inactive: the workspace enforces policies of its own"
		if l.BuiltinsActive {
			state = "active: the workspace enforces no policy of its own"
		}
		fmt.Fprintf(out, "\nbuilt-in rules (%s):\n", state)
		return table(out, map[string]any{"builtins": l.Builtins}, trustPolicyCols[1:])
	case "get", "delete":
		p, err := one()
		if err != nil {
			return err
		}
		return o.call(map[string]string{"get": "GET", "delete": "DELETE"}[verb], p, nil, res, out)
	case "update":
		p, err := one()
		if err != nil {
			return err
		}
		body, err := o.body(res)
		if err != nil {
			return err
		}
		return o.call("PUT", p, body, res, out) // a policy is replaced whole
	}
	return fmt.Errorf("usage: trustctl trust-policies create|list|get <id>|update <id>|delete <id> --workspace <id>")
}
