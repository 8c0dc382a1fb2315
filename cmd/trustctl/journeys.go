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
// put creates or replaces; every change increments policy_version.

var journeyCols = []string{"key", "name", "method", "requested_assurance", "policy_version", "session_lifetime_seconds"}

func (o *options) journeys(verb string, rest []string, out io.Writer) error {
	if o.workspace == "" {
		return fmt.Errorf("journeys needs --workspace <id>")
	}
	res := resource{cols: journeyCols}
	coll := "/admin/v1/workspaces/" + o.workspace + "/journeys"
	one := func() (string, error) {
		if len(rest) != 1 {
			return "", fmt.Errorf("journeys %s needs one key", verb)
		}
		return coll + "/" + rest[0], nil
	}
	switch verb {
	case "list":
		return o.call("GET", coll, nil, res, out)
	case "put":
		p, err := one()
		if err != nil {
			return err
		}
		body, err := o.body(res)
		if err != nil {
			return err
		}
		return o.call("PUT", p, body, res, out)
	case "get", "delete":
		p, err := one()
		if err != nil {
			return err
		}
		return o.call(map[string]string{"get": "GET", "delete": "DELETE"}[verb], p, nil, res, out)
	case "erase-subject":
		body, err := o.body(resource{})
		if err != nil {
			return err
		}
		return o.call("POST", "/admin/v1/workspaces/"+o.workspace+"/journey-subjects/erase", body, resource{cols: []string{"deleted"}}, out)
	}
	return fmt.Errorf("journeys: unknown verb %q (put, list, get, delete, erase-subject)", verb)
}
