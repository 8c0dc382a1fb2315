package session

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"net"
	"net/url"
	"strings"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
	"github.com/trustd/trustd/platform/lib/ident"
)

// Hosted capture (spec 4.7): the service serves the capture page. The
// creator (a server with a credential) gets the session capability as for
// a direct session plus a separate hosted capability, which travels to the
// browser in the URL fragment (never sent to any server by the browser),
// is removed from the address bar by the page at once, and authenticates
// the page's calls in X-Service-Hosted-Token. It opens the same session
// operations as the session capability until the capture deadline.

// HostedPrefix starts every hosted capability.
const HostedPrefix = "ivhs_"

// Themes and locales the hosted page honours.
var (
	Themes  = []string{"system", "light", "dark"}
	Locales = []string{"en", "fr", "de", "es"}
)

// ErrOrigin refuses a parent_origin or return_url off the workspace's
// site allow-lists.
var ErrOrigin = errcode.New("hosted-origin-refused", errcode.Invalid, "parent_origin must be an origin (scheme://host[:port]) and return_url an absolute URL, https (http only for localhost and 127.0.0.1), whose host is on the hostnames of one of the workspace's sites (exact match).")

// HostedRequest is the body of POST /identity/hosted/session beyond the
// session fields.
type HostedRequest struct {
	CreateRequest
	ParentOrigin string
	ReturnURL    string
	Theme        string
	Locale       string
}

// HostedCreated is a hosted session: the session capability for the
// creator's server and the hosted capability for the page URL.
type HostedCreated struct {
	Created
	HostedToken string `json:"-"`
}

// HostedInfo is what the hosted page reads about its session.
type HostedInfo struct {
	Result
	ParentOrigin string `json:"parent_origin,omitempty"`
	ReturnURL    string `json:"return_url,omitempty"`
	Theme        string `json:"theme" required:"true" enum:"system|light|dark"`
	Locale       string `json:"locale" required:"true"`
}

func loopback(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

// allowedURL checks u is https (http for loopback), without user info, on
// a host of one of the workspace's sites; origin demands no path.
func allowedURL(c *catalog.Catalog, ws, raw string, origin bool) bool {
	if raw == "" || len(raw) > 2048 {
		return false
	}
	u, err := url.Parse(raw)
	if err != nil || u.User != nil || u.Host == "" || u.Fragment != "" || u.Opaque != "" {
		return false
	}
	host := u.Hostname()
	if u.Scheme != "https" && !(u.Scheme == "http" && loopback(host)) {
		return false
	}
	if origin && (u.Path != "" || u.RawQuery != "" || strings.HasSuffix(raw, "/")) {
		return false
	}
	if h, _, err := net.SplitHostPort(u.Host); err == nil {
		host = h
	}
	for _, s := range c.SitesOf(ws) {
		if s.AllowsHost(host) {
			return true
		}
	}
	return false
}

// CreateHosted starts a session for the hosted page.
func (m *Module) CreateHosted(ctx context.Context, who Caller, r HostedRequest) (*HostedCreated, error) {
	if !r.ConsentAccepted || r.ConsentReference == "" {
		return nil, ErrConsent
	}
	theme, locale := r.Theme, r.Locale
	if theme == "" {
		theme = "system"
	}
	if !contains(Themes, theme) {
		return nil, errcode.Field("theme", "system, light or dark")
	}
	if locale == "" {
		locale = "en"
	}
	if len(locale) > 35 || !ident.Action(locale) {
		return nil, errcode.Field("locale", "a language tag such as en or fr-CA")
	}
	if base := strings.ToLower(strings.SplitN(strings.ReplaceAll(locale, "_", "-"), "-", 2)[0]); contains(Locales, base) {
		locale = base
	} else {
		locale = "en"
	}
	cat := m.d.Store.Catalog()
	if r.ParentOrigin == "" && r.ReturnURL == "" {
		return nil, ErrOrigin.With("give parent_origin (embedded) or return_url (redirect), or both")
	}
	if r.ParentOrigin != "" && !allowedURL(cat, who.WorkspaceID, r.ParentOrigin, true) {
		return nil, ErrOrigin.With("parent_origin %q is not an allowed origin", r.ParentOrigin)
	}
	if r.ReturnURL != "" && !allowedURL(cat, who.WorkspaceID, r.ReturnURL, false) {
		return nil, ErrOrigin.With("return_url is not an allowed URL")
	}
	var tok [32]byte
	_, _ = rand.Read(tok[:])
	hosted := HostedPrefix + base64.RawURLEncoding.EncodeToString(tok[:])
	c, err := m.create(ctx, who, r.CreateRequest, func(s *catalog.IdentitySession) {
		s.HostedHash, s.ParentOrigin, s.ReturnURL, s.Theme, s.Locale = catalog.HashSecret(hosted), r.ParentOrigin, r.ReturnURL, theme, locale
	})
	if err != nil {
		return nil, err
	}
	return &HostedCreated{Created: *c, HostedToken: hosted}, nil
}

func contains(ss []string, s string) bool {
	for _, v := range ss {
		if v == s {
			return true
		}
	}
	return false
}

// HostedCaller is the caller of a hosted page's call: the session's
// workspace, with the scope its level needs. The hosted capability is
// checked by the operation itself (load).
func (m *Module) HostedCaller(id string) Caller {
	s := m.d.Store.Catalog().IdentitySessionAnywhere(id)
	if s == nil || s.HostedHash == (catalog.Hash{}) {
		return Caller{}
	}
	return Caller{WorkspaceID: s.WorkspaceID, Scopes: []string{ScopeVerify}}
}

// Hosted reads the hosted page's view of its session.
func (m *Module) Hosted(ctx context.Context, id, hostedToken string) (*HostedInfo, error) {
	if !strings.HasPrefix(hostedToken, HostedPrefix) {
		return nil, ErrCapability
	}
	r, err := m.Result(ctx, m.HostedCaller(id), id, hostedToken)
	if err != nil {
		return nil, err
	}
	s := m.d.Store.Catalog().IdentitySessionAnywhere(id)
	return &HostedInfo{Result: *r, ParentOrigin: s.ParentOrigin, ReturnURL: s.ReturnURL, Theme: s.Theme, Locale: s.Locale}, nil
}

// FrameAncestors is the CSP frame-ancestors source of the hosted page of
// session id: its parent_origin, or 'none'.
func (m *Module) FrameAncestors(id string) string {
	if s := m.d.Store.Catalog().IdentitySessionAnywhere(id); s != nil && s.ParentOrigin != "" && s.HostedHash != (catalog.Hash{}) {
		return s.ParentOrigin
	}
	return "'none'"
}
