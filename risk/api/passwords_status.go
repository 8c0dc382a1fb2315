package api

import (
	kernel "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/risk/passwords"
)

// PasswordCorpusStatus describes the breached-password corpus one mode's
// range queries are answered from, on this node.
type PasswordCorpusStatus struct {
	Mode  string            `json:"mode" required:"true" enum:"sha1|ntlm"`
	Error string            `json:"error,omitempty" doc:"Why this mode has no corpus on this node (its range queries fail)."`
	Info  *passwords.Corpus `json:"corpus,omitempty"`
}

// PasswordStatus is the answer of GET /admin/v1/passwords/status.
type PasswordStatus struct {
	Node    string                 `json:"node" required:"true"`
	Corpora []PasswordCorpusStatus `json:"corpora" required:"true"`
}

func (p passwordsAPI) statusRoutes() []kernel.Route {
	return []kernel.Route{
		{Method: "GET", Path: "/passwords/status", Admin: true, ID: "passwordStatus", Tag: "Admin", Auth: []kernel.Auth{kernel.AuthAdmin},
			Summary: "The breached-password corpus each mode answers from on this node: source, count semantics, size, embedded or imported.",
			Result:  &PasswordStatus{}, Errors: kernel.AdminErrors(), Handle: kernel.AdminOnly(func(c *kernel.Call) {
				out := PasswordStatus{Node: p.node, Corpora: []PasswordCorpusStatus{}}
				for _, m := range passwords.Modes {
					st := PasswordCorpusStatus{Mode: m.String()}
					if info, err := p.m.Corpus(m); err != nil {
						st.Error = err.Error()
					} else {
						st.Info = &info
					}
					out.Corpora = append(out.Corpora, st)
				}
				c.OK(out)
			})},
	}
}
