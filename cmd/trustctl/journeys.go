package main

import (
	"fmt"
	"io"
)

// journeys: a workspace's journey definitions (spec 4.8, 2.7).
//
//	trustctl journeys put pay --workspace <id> --name Payment --method device_authorization \
//	    --requested-assurance standard --requirements '{"identity":true,"liveness":false,"authorization":true,"operation_binding":true}' \
//	    [--consent '{"required":true,"version":"v1"}'] [--escalation '{"enabled":true,"high_risk_method":"facial_authorization"}']
//	trustctl journeys list --workspace <id>
//	trustctl journeys get|delete <key> --workspace <id>
//	trustctl journeys erase-subject --workspace <id> --subject-id <id>   (face template and passkeys)
//
// put creates or replaces; every change increments policy_version. list,
// get and delete are the generic verbs of run().

var journeyCols = []string{"key", "name", "method", "requested_assurance", "policy_version", "session_lifetime_seconds"}

// journeyVerb runs the journey-specific verbs (a journey is put under its
// key, never created under an id the service picks); handled is false for
// the generic ones.
func (o *options) journeyVerb(noun, verb string, rest []string, coll string, res resource, out io.Writer) (handled bool, err error) {
	if noun != "journeys" {
		return false, nil
	}
	switch verb {
	case "list", "get", "delete":
		return false, nil
	case "put":
		if len(rest) != 1 {
			return true, fmt.Errorf("journeys put needs one key")
		}
		body, err := o.body(res)
		if err != nil {
			return true, err
		}
		return true, o.call("PUT", coll+"/"+rest[0], body, res, out)
	case "erase-subject":
		body, err := o.body(resource{})
		if err != nil {
			return true, err
		}
		return true, o.call("POST", "/admin/v1/workspaces/"+o.workspace+"/journey-subjects/erase", body, resource{cols: []string{"deleted"}}, out)
	}
	return true, fmt.Errorf("journeys: unknown verb %q (put, list, get, delete, erase-subject)", verb)
}
