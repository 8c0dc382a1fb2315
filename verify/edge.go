package verify

import (
	"net/url"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
	"github.com/trustd/trustd/platform/lib/ident"
	"github.com/trustd/trustd/platform/token"
)

// Edge pre-clearance (spec 4.13). After a successful siteverify the
// customer's backend may exchange the assessment_id for a clearance: a
// short-lived signed value, reusable until it expires, bound to the site
// and to whichever of host, action, path, subject and device it names. A
// reverse proxy then asks the edge decision on every request (nginx
// auth_request, Traefik ForwardAuth, Caddy forward_auth): allow lets the
// request through, ErrClearanceRequired sends the visitor to a challenge.
// The decision is stateless (signature, expiry, bindings), so it costs no
// actor round trip.

// Names a proxy passes the clearance in.
const (
	ClearanceCookie = "trustd_clearance"
	ClearanceHeader = "X-Service-Clearance"
	maxClearanceTTL = 3600
)

// PreclearanceInput asks for a clearance.
type PreclearanceInput struct {
	Secret       string `json:"secret" doc:"The site's private secret (or send it as Authorization: Bearer)."`
	AssessmentID string `json:"assessment_id" required:"true" format:"uuid" doc:"From a successful siteverify of this site."`
	Host         string `json:"host" doc:"Bind to this exact host (X-Forwarded-Host at the proxy)."`
	Action       string `json:"action" doc:"Bind to this action (the proxy sends X-Service-Action)."`
	Path         string `json:"path" doc:"Bind to this path and everything below it (/checkout matches /checkout and /checkout/pay, not /checkouts)."`
	Subject      string `json:"subject" doc:"Bind to this subject (the proxy sends X-Service-Subject); kept only as a keyed hash."`
	Device       string `json:"device" doc:"Bind to this device id (the proxy sends X-Service-Device); kept only as a keyed hash."`
	TTLSeconds   int    `json:"ttl_seconds" doc:"Lifetime, 10 to 3600; default 300."`
}

// PreclearanceView is the answer of POST /edge/preclearance/issue.
type PreclearanceView struct {
	Clearance  string   `json:"clearance" required:"true" doc:"Set it as the cookie trustd_clearance, or have the client send it in X-Service-Clearance."`
	CookieName string   `json:"cookie_name" required:"true"`
	HeaderName string   `json:"header_name" required:"true"`
	ExpiresIn  int      `json:"expires_in" required:"true"`
	Bound      []string `json:"bound" required:"true" doc:"What the clearance is bound to: site and any of host, action, path, subject, device."`
}

// EdgeDecision is the body of an allowing decision.
type EdgeDecision struct {
	Allow        bool   `json:"allow" required:"true"`
	SiteID       string `json:"site_id" required:"true"`
	AssessmentID string `json:"assessment_id" required:"true"`
	ExpiresIn    int    `json:"expires_in" required:"true"`
}

// EdgeRequest is what the proxy forwarded of the original request.
type EdgeRequest struct {
	Clearance string // header, else cookie
	SiteKey   string // optional pin (query sitekey)
	Host      string // lowercase, without port (X-Forwarded-Host, else Host)
	Path      string // raw path without query (X-Forwarded-Uri or X-Original-URI), "/" when absent
	Action    string // X-Service-Action
	Subject   string // X-Service-Subject
	Device    string // X-Service-Device
}

// scopeHash keys a subject or device value with the workspace's key.
func scopeHash(cat *catalog.Catalog, workspaceID, label, v string) [16]byte {
	var key []byte
	if w := cat.Workspaces[workspaceID]; w != nil {
		key = w.ScopeKey
	}
	return token.NewKey("", append([]byte("edge\x00"), key...)).Hash16(label, v)
}

// IssuePreclearance exchanges a successful verification of site (the
// caller, authenticated by its secret) for a signed clearance.
func (m *Module) IssuePreclearance(cat *catalog.Catalog, site *catalog.Site, in *PreclearanceInput) (*PreclearanceView, error) {
	switch {
	case in.TTLSeconds != 0 && (in.TTLSeconds < 10 || in.TTLSeconds > maxClearanceTTL):
		return nil, errcode.Field("ttl_seconds", "10 to 3600")
	case in.Host != "" && !ident.Hostname(strings.ToLower(in.Host)):
		return nil, errcode.Field("host", "a hostname")
	case !ValidAction(in.Action):
		return nil, errcode.Field("action", "up to 64 of A-Z a-z 0-9 _ - . /")
	case in.Path != "" && (in.Path[0] != '/' || len(in.Path) > token.MaxPath || strings.ContainsAny(in.Path, "?#") || !isCanonical(in.Path)):
		return nil, errcode.Field("path", "an absolute, canonical path (no dot segments, escapes or backslashes) without query, at most 512 bytes")
	case len(in.Subject) > 256 || len(in.Device) > 256:
		return nil, errcode.Field("subject", "subject and device are at most 256 bytes")
	case len(in.AssessmentID) != 36:
		return nil, errcode.Field("assessment_id", "a UUID")
	}
	get, err := m.getVerification(in.AssessmentID)
	if err != nil {
		return nil, err
	}
	if !get.Found || get.A.SiteID != site.ID {
		return nil, ErrUnknownAssessment.With("no successful verification of this site has that assessment_id")
	}
	k := m.Signer(cat, catalog.KeyLive)
	if k == nil {
		return nil, errNoKey(catalog.KeyLive)
	}
	ttl := in.TTLSeconds
	if ttl == 0 {
		ttl = 300
	}
	now := m.now().Unix()
	cl := token.Clearance{ID: RandomID(), SiteID: site.ID, AssessmentID: in.AssessmentID, Host: strings.ToLower(in.Host),
		Action: in.Action, Path: in.Path, Issued: now, Expires: now + int64(ttl)}
	bound := []string{"site"}
	for _, b := range []struct {
		name string
		on   bool
	}{{"host", in.Host != ""}, {"action", in.Action != ""}, {"path", in.Path != ""}} {
		if b.on {
			bound = append(bound, b.name)
		}
	}
	if in.Subject != "" {
		cl.HasSubject, cl.SubjectHash = true, scopeHash(cat, site.WorkspaceID, "subject", in.Subject)
		bound = append(bound, "subject")
	}
	if in.Device != "" {
		cl.HasDevice, cl.DeviceHash = true, scopeHash(cat, site.WorkspaceID, "device", in.Device)
		bound = append(bound, "device")
	}
	return &PreclearanceView{Clearance: cl.Sign(k), CookieName: ClearanceCookie, HeaderName: ClearanceHeader,
		ExpiresIn: ttl, Bound: bound}, nil
}

// Decide is the edge decision of one proxied request: an allowing
// decision, or ErrClearanceRequired saying why not.
func (m *Module) Decide(cat *catalog.Catalog, r *EdgeRequest) (*EdgeDecision, error) {
	if r.Clearance == "" {
		return nil, ErrClearanceRequired.With("no clearance")
	}
	cl, err := token.DecodeClearance(r.Clearance, func(id string) *token.Key { return m.verifier(cat, catalog.KeyLive, id) })
	site := cat.Sites[cl.SiteID]
	now := m.now().Unix()
	switch {
	case err != nil || site == nil:
		return nil, ErrClearanceRequired.With("the clearance is not valid")
	case now >= cl.Expires:
		return nil, ErrClearanceRequired.With("the clearance expired")
	case r.SiteKey != "" && r.SiteKey != site.SiteKey:
		return nil, ErrClearanceRequired.With("the clearance belongs to another site")
	case cl.Host != "" && r.Host != cl.Host:
		return nil, ErrClearanceRequired.With("the clearance is bound to another host")
	case cl.Action != "" && r.Action != cl.Action:
		return nil, ErrClearanceRequired.With("the clearance is bound to another action")
	case !pathWithin(r.Path, cl.Path):
		return nil, ErrClearanceRequired.With("the clearance is bound to another path")
	case cl.HasSubject && scopeHash(cat, site.WorkspaceID, "subject", r.Subject) != cl.SubjectHash:
		return nil, ErrClearanceRequired.With("the clearance is bound to another subject")
	case cl.HasDevice && scopeHash(cat, site.WorkspaceID, "device", r.Device) != cl.DeviceHash:
		return nil, ErrClearanceRequired.With("the clearance is bound to another device")
	}
	return &EdgeDecision{Allow: true, SiteID: site.ID, AssessmentID: cl.AssessmentID, ExpiresIn: int(cl.Expires - now)}, nil
}

// pathWithin reports whether the raw request path, once canonical, is
// the bound path itself or lies below it, on segment boundaries. A path
// that cannot be made canonical (encoded separators, NUL, backslashes,
// double encoding) is never within: what the proxy forwards and what the
// origin routes must not be two different paths.
func pathWithin(raw, bound string) bool {
	if bound == "" {
		return true
	}
	path, ok := canonicalPath(raw)
	if !ok {
		return false
	}
	if path == bound {
		return true
	}
	if strings.HasSuffix(bound, "/") {
		return strings.HasPrefix(path, bound)
	}
	return strings.HasPrefix(path, bound+"/")
}

// canonicalPath decodes a request path once and resolves its dot
// segments. It refuses what an origin might decode, strip or split
// differently from us:
//   - encoded slashes and backslashes (%2F, %5C), literal backslashes, NUL
//     and other control bytes, and any percent sign left after one
//     decoding (double encoding such as %252e);
//   - a ";" in any segment, literal or encoded: Tomcat, Jetty and Spring
//     drop ";params" from a segment before resolving "..", so
//     /checkout/..;/admin is /admin to them;
//   - a "?" or "#" after decoding (%3F, %23): an origin that decodes first
//     splits the path there, so /admin%3f/../checkout is /admin to it;
//   - bytes that are not UTF-8, overlong forms included (%c0%ae is a dot
//     to a lax decoder), and any non-ASCII character that Unicode
//     compatibility normalisation or a look-alike turns into a dot, a
//     slash or one of the separators above (full-width dots U+FF0E, the
//     leaders U+2024 and U+2025, U+FE52, the ideographic full stop,
//     division and fraction slashes, the Greek question mark), and the
//     invisible characters a normaliser may drop (soft hyphen, zero-width
//     space, byte-order mark, variation selectors, C1 controls).
//
// Other non-ASCII letters stay a path: /checkout/über is below /checkout.
func canonicalPath(raw string) (string, bool) {
	if raw == "" || raw[0] != '/' {
		return "", false
	}
	lower := strings.ToLower(raw)
	if strings.Contains(lower, "%2f") || strings.Contains(lower, "%5c") || strings.Contains(lower, "%00") {
		return "", false
	}
	dec, err := url.PathUnescape(raw)
	if err != nil || !utf8.ValidString(dec) {
		return "", false
	}
	ascii := true
	for i := 0; i < len(dec); i++ {
		switch c := dec[i]; {
		case c < 0x20 || c == 0x7f || c == '\\' || c == '%' || c == ';' || c == '?' || c == '#':
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	if !ascii && !plainRunes(dec) {
		return "", false
	}
	clean := path.Clean(dec)
	if strings.HasSuffix(dec, "/") && clean != "/" {
		clean += "/"
	}
	return clean, true
}

// plainRunes reports whether no non-ASCII character of s is, or
// normalises (NFKC) to, a dot, a slash, a backslash or a separator that
// canonicalPath refuses.
func plainRunes(s string) bool {
	for _, r := range s {
		if r < utf8.RuneSelf {
			continue
		}
		if lookAlike(r) || ignorable(r) {
			return false
		}
		for _, c := range norm.NFKC.String(string(r)) {
			if c < utf8.RuneSelf && strings.ContainsRune("./\\;?#%", c) || c < 0x20 || lookAlike(c) {
				return false
			}
		}
	}
	return true
}

// ignorable reports the characters a normaliser may drop or a reader not
// see: format characters (soft hyphen, zero-width space and joiners, the
// byte-order mark, bidirectional marks), variation selectors, C1 controls
// and the Hangul fillers. "..\u00ad" is ".." once the soft hyphen goes.
func ignorable(r rune) bool {
	switch r {
	case '\u034f', '\u115f', '\u1160', '\u17b4', '\u17b5', '\u3164', '\uffa0':
		return true
	}
	return unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Variation_Selector, r) || unicode.IsControl(r)
}

// lookAlike reports the dots and slashes that NFKC leaves alone but a
// reader (or an IDNA-style mapping) takes for "." or "/".
func lookAlike(r rune) bool {
	switch r {
	case '\u3002', '\uff61', // ideographic and half-width ideographic full stops
		'\u2215', '\u2044', '\u29f8', // division slash, fraction slash, big solidus
		'\u2216', '\u29f5', '\u29f9': // set minus and reverse solidus operators
		return true
	}
	return false
}

func isCanonical(p string) bool {
	c, ok := canonicalPath(p)
	return ok && c == p && !strings.Contains(p, "%")
}
