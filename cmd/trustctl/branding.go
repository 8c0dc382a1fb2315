package main

import (
	"encoding/base64"
	"fmt"
	"io"
	"os"
)

// branding-profiles: the generic verbs (create, list, get, update, delete)
// come from the resources table; these two upload and remove a logo.
//
//	trustctl branding-profiles create --workspace <id> --name Acme --colors '{"primary":"#1a73e8"}'
//	trustctl branding-profiles logo <profile id> --workspace <id> --in logo.png   (PNG, JPEG or WebP)
//	trustctl branding-profiles remove-logo <profile id> --workspace <id>

func (o *options) brandingLogo(verb string, rest []string, out io.Writer) error {
	if o.workspace == "" || len(rest) != 1 {
		return fmt.Errorf("usage: trustctl branding-profiles logo|remove-logo <profile id> --workspace <id> [--in FILE]")
	}
	res := resources["branding-profiles"]
	path := "/admin/v1/workspaces/" + o.workspace + res.path + "/" + rest[0] + "/logo"
	if verb == "remove-logo" {
		return o.call("DELETE", path, nil, res, out)
	}
	in := o.fields["in"]
	if in == "" {
		return fmt.Errorf("branding-profiles logo needs --in FILE")
	}
	b, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	return o.call("PUT", path, map[string]string{"image": base64.StdEncoding.EncodeToString(b)}, res, out)
}
