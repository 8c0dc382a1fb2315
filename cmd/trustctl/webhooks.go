package main

import (
	"fmt"
	"io"
)

// Signed webhooks: the verbs beyond create/list/get/update/delete.
//
//	trustctl webhooks create --workspace W --url https://hooks.example.com/trustd [--event-types a,b]
//	trustctl webhooks rotate-secret <id> --workspace W [--overlap-seconds N]
//	trustctl webhooks test <id> --workspace W
//	trustctl webhooks deliveries <id> --workspace W
//	trustctl webhooks alerts --workspace W
//	trustctl webhook-events list|get <id> --workspace W
//	trustctl webhook-events redeliver <id> --workspace W [--endpoint-id E]

const webhooksUsage = `usage: trustctl webhooks rotate-secret|test|deliveries <endpoint id> --workspace <id> [--overlap-seconds N]
       trustctl webhooks alerts --workspace <id>
       trustctl webhook-events list | get <event id> | redeliver <event id> [--endpoint-id <id>] --workspace <id>`

var (
	webhookAttemptCols = resource{cols: []string{"at", "event_id", "event_type", "attempt", "outcome", "http_status", "error", "duration_ms"}}
	webhookAlertCols   = resource{cols: []string{"at", "endpoint_id", "kind", "message"}}
)

// webhookVerb runs the webhook-specific verbs; handled is false for the
// generic ones, which run() serves.
func (o *options) webhookVerb(noun, verb string, rest []string, coll string, res resource, out io.Writer) (handled bool, err error) {
	if noun != "webhooks" && noun != "webhook-events" {
		return false, nil
	}
	one := func() (string, error) {
		if len(rest) != 1 {
			return "", fmt.Errorf("%s", webhooksUsage)
		}
		return rest[0], nil
	}
	switch {
	case noun == "webhooks" && verb == "alerts":
		return true, o.call("GET", coll[:len(coll)-len("/webhooks")]+"/webhook-alerts", nil, webhookAlertCols, out)
	case noun == "webhooks" && (verb == "rotate-secret" || verb == "test" || verb == "deliveries"):
		id, err := one()
		if err != nil {
			return true, err
		}
		switch verb {
		case "deliveries":
			return true, o.call("GET", coll+"/"+id+"/deliveries", nil, webhookAttemptCols, out)
		case "test":
			return true, o.call("POST", coll+"/"+id+"/test", nil, resource{cols: []string{"event_id"}}, out)
		}
		body, err := o.body(res)
		if err != nil {
			return true, err
		}
		return true, o.call("POST", coll+"/"+id+"/rotate-secret", body, res, out)
	case noun == "webhook-events" && verb == "redeliver":
		id, err := one()
		if err != nil {
			return true, err
		}
		body, err := o.body(res)
		if err != nil {
			return true, err
		}
		return true, o.call("POST", coll+"/"+id+"/redeliver", body, res, out)
	case noun == "webhook-events" && (verb == "create" || verb == "update" || verb == "delete"):
		return true, fmt.Errorf("events are emitted by the service, not created by hand\n%s", webhooksUsage)
	}
	return false, nil
}
