package main

import (
	"fmt"
	"io"
)

// messaging: a workspace's messaging-provider preflight settings.
//
//	trustctl messaging get --workspace <id>
//	trustctl messaging policy --workspace <id> [--prefix-limit 10 --block-seconds 14400 --allowed-countries FR,GB …] | [--file policy.json]
//	trustctl messaging rotate-secret --workspace <id> [--overlap-seconds 3600]   (prints the signing secret once)
//	trustctl messaging delete --workspace <id>
//
// policy sends the knobs given (0 or absent: the default) as the whole
// policy; --file sends the file as the policy object.

var messagingCols = []string{"workspace_id", "secrets_valid", "secret", "policy", "updated_at"}

func (o *options) messaging(verb string, out io.Writer) error {
	if o.workspace == "" {
		return fmt.Errorf("messaging needs --workspace <id>")
	}
	res := resource{cols: messagingCols, lists: []string{"allowed_countries", "blocked_countries", "channels"}}
	base := "/admin/v1/workspaces/" + o.workspace + "/messaging"
	switch verb {
	case "get":
		return o.call("GET", base, nil, res, out)
	case "delete":
		return o.call("DELETE", base, nil, res, out)
	case "rotate-secret":
		body, err := o.body(res)
		if err != nil {
			return err
		}
		return o.call("POST", base+"/rotate-secret", body, res, out)
	case "policy":
		policy, err := o.body(res)
		if err != nil {
			return err
		}
		return o.call("PUT", base+"/policy", map[string]any{"policy": policy}, res, out)
	}
	return fmt.Errorf("usage: trustctl messaging get|policy|rotate-secret|delete --workspace <id>")
}
