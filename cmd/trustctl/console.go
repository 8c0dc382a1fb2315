package main

import (
	"fmt"
	"io"
	"net/url"
)

// Workspace console users and the audit log:
//
//	trustctl console-users create --workspace W --email ann@example.com --role viewer|editor|approver [--password P]
//	trustctl console-users list --workspace W
//	trustctl console-users update <id> --workspace W [--role R] [--password P]
//	trustctl console-users delete <id> --workspace W
//	trustctl console-users link <id> --workspace W     (a new one-time sign-in link, printed once)
//	trustctl audit list [--workspace W] [--limit N]
//
// Without --password, create prints a one-time sign-in link (valid 15
// minutes) instead: the way to give someone access in dev without a
// password crossing a terminal. A --password on the command line lands in
// the shell's history; prefer the link, and let the user set nothing else.

const consoleUsage = `usage: trustctl console-users create --email E --role viewer|editor|approver [--password P] --workspace <id>
       trustctl console-users list | delete <id> | update <id> [--role R] [--password P] | link <id>  --workspace <id>
       trustctl audit list [--workspace <id>] [--limit N]`

// linkNote follows a printed sign-in link: how long it lasts, said where
// it is shown.
const linkNote = "The sign-in link works once and expires 15 minutes after it was issued (sign_in_expires_at); issue a new one with: trustctl console-users link <id> --workspace <id>\n"

// withLinkNote runs call and, on a table, says how long a sign-in link
// lasts (a --password create issues none; --json output stays JSON).
func (o *options) withLinkNote(out io.Writer, call func() error) error {
	if err := call(); err != nil {
		return err
	}
	if !o.asJSON {
		if _, password := o.fields["password"]; !password {
			fmt.Fprint(out, linkNote)
		}
	}
	return nil
}

var auditCols = resource{cols: []string{"seq", "at", "actor", "via", "operation", "method", "path", "status"}}

// consoleVerb runs the console-users and audit verbs that the generic
// create/list/get/update/delete do not cover; handled is false otherwise.
func (o *options) consoleVerb(noun, verb string, rest []string, coll string, res resource, out io.Writer) (handled bool, err error) {
	switch {
	case noun == "console-users" && verb == "link":
		if len(rest) != 1 {
			return true, fmt.Errorf("%s", consoleUsage)
		}
		return true, o.withLinkNote(out, func() error { return o.call("POST", coll+"/"+rest[0]+"/sign-in-link", nil, res, out) })
	case noun == "console-users" && verb == "create":
		body, err := o.body(res)
		if err != nil {
			return true, err
		}
		return true, o.withLinkNote(out, func() error { return o.call("POST", coll, body, res, out) })
	case noun == "console-users" && verb == "get":
		return true, fmt.Errorf("console-users has no get; use list\n%s", consoleUsage)
	case noun == "audit" && verb == "list":
		q := url.Values{}
		if o.workspace != "" {
			q.Set("workspace_id", o.workspace)
		}
		if l, ok := o.fields["limit"]; ok {
			q.Set("limit", l)
		}
		path := coll
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
		return true, o.call("GET", path, nil, auditCols, out)
	case noun == "audit":
		return true, fmt.Errorf("%s", consoleUsage)
	}
	return false, nil
}
