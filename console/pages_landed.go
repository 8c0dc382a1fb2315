package console

import (
	"encoding/base64"
	"encoding/json"
	"html/template"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/trustd/trustd/console/users"
)

// Pages of the modules that landed after the first console: the identity
// review queue, journey definitions, branding profiles and the messaging
// preflight's settings. Each is admin API calls and nothing else: the
// review queue resolves with POST …/reviews/{case_id}/resolve (the same
// module call as the admin API), journeys are defined with PUT
// …/journeys/{key} (its strict decoding and validation), branding with the
// generic resource's create/PATCH and the logo PUT (its decoder and
// re-encoding).

// ---- Identity review queue ----

type reviewCase struct {
	CaseID     string     `json:"case_id"`
	Kind       string     `json:"kind"`
	Reference  string     `json:"reference"`
	Status     string     `json:"status"`
	Reasons    []string   `json:"reasons"`
	Decision   string     `json:"decision"`
	Note       string     `json:"note"`
	ResolvedBy string     `json:"resolved_by"`
	CreatedAt  time.Time  `json:"created_at"`
	ResolvedAt *time.Time `json:"resolved_at"`
	Session    *struct {
		AssuranceLevel string            `json:"assurance_level"`
		Action         string            `json:"action"`
		Country        string            `json:"country"`
		DocumentType   string            `json:"document_type"`
		Status         string            `json:"status"`
		Attempts       []json.RawMessage `json:"attempts"`
		Redacted       bool              `json:"redacted"`
	} `json:"session"`
}

type reviewsData struct {
	Workspace  workspaceView
	Cases      []reviewCase
	Filter     string
	CanResolve bool
	Decisions  []string
}

func (c *Console) reviews(r *req) { c.renderReviews(r, 200, "", "") }

func (c *Console) renderReviews(r *req, status int, msg, errMsg string) {
	ws := r.params.ws
	d := reviewsData{Filter: "open", CanResolve: r.sess.principal.Can(users.Approve, ws), Decisions: []string{"verified", "rejected"}}
	if r.ctx.QueryArgs().Has("all") {
		d.Filter = ""
	}
	base := "/workspaces/" + ws
	if !c.getAll(r, apiRead{base, &d.Workspace}) {
		return
	}
	path := base + "/reviews"
	if d.Filter != "" {
		path += "?status=" + d.Filter
	}
	var cl struct {
		Cases []reviewCase `json:"cases"`
	}
	if !c.getAll(r, apiRead{path, &cl}) {
		return
	}
	d.Cases = cl.Cases
	c.render(r, status, "reviews", pageData{Title: "Identity review queue", Nav: "workspaces", Tab: "reviews", Workspace: ws, Notice: msg, Error: errMsg, Data: d})
}

// resolveReview resolves an open case with the admin API's operation; the
// decision is recorded as made by the session's principal.
func (c *Console) resolveReview(r *req) {
	f := r.ctx.PostArgs()
	by := r.sess.principal.Email
	if r.sess.principal.Admin {
		by = "admin (console)"
	}
	body := map[string]any{"decision": string(f.Peek("decision")), "by": by}
	if n := strings.TrimSpace(string(f.Peek("note"))); n != "" {
		body["note"] = n
	}
	st, e := c.call(r, "POST", "/workspaces/"+r.params.ws+"/reviews/"+r.params.id+"/resolve", body, nil)
	if c.refused(r, st, e, func(e *apiError) {
		c.renderReviews(r, 422, "", "The case was not resolved: "+e.Message)
	}) {
		return
	}
	c.renderReviews(r, 200, "Case "+r.params.id+" resolved.", "")
}

// ---- Journeys ----

type journeyView struct {
	Key                string    `json:"key"`
	Name               string    `json:"name"`
	Method             string    `json:"method"`
	RequestedAssurance string    `json:"requested_assurance"`
	PolicyVersion      int       `json:"policy_version"`
	UpdatedAt          time.Time `json:"updated_at"`
}

type journeysData struct {
	Workspace workspaceView
	Journeys  []journeyView
	CanEdit   bool
	// Key and Definition are the form's values: an example on the list
	// page, the current definition on a journey's page, what was sent
	// after a refusal.
	Key, Definition string
	// Journey is the journey being edited ("" on the list page).
	Journey *journeyView
}

// journeyExample is the definition the create form starts from; the
// admin API validates whatever is sent.
const journeyExample = `{
  "name": "Human check at sign-up",
  "method": "human_verification",
  "requested_assurance": "none",
  "consent": {"required": false, "version": ""},
  "requirements": {"identity": false, "liveness": false, "authorization": false, "operation_binding": false},
  "session_lifetime_seconds": 300,
  "escalation": {"enabled": false, "high_risk_method": "", "medium_risk_method": "", "review_on_high_risk": false}
}`

func (c *Console) journeys(r *req) {
	c.renderJourneys(r, 200, "", "", journeysData{Definition: journeyExample})
}

func (c *Console) renderJourneys(r *req, status int, msg, errMsg string, d journeysData) {
	ws := r.params.ws
	d.CanEdit = r.sess.principal.Can(users.Edit, ws)
	base := "/workspaces/" + ws
	var jl struct {
		Journeys []journeyView `json:"journeys"`
	}
	if !c.getAll(r, apiRead{base, &d.Workspace}, apiRead{base + "/journeys", &jl}) {
		return
	}
	d.Journeys = jl.Journeys
	c.render(r, status, "journeys", pageData{Title: "Journeys", Nav: "workspaces", Tab: "journeys", Workspace: ws, Notice: msg, Error: errMsg, Data: d})
}

// journeyInput turns a journey's admin view into the body PUT takes: the
// fields the server sets (key, policy_version, times) are dropped.
func journeyInput(view []byte) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(view, &m) != nil {
		return ""
	}
	for _, k := range []string{"key", "policy_version", "created_at", "updated_at"} {
		delete(m, k)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return ""
	}
	return string(b)
}

func (c *Console) journey(r *req) {
	st, raw := c.b.Admin(r.actor(), "GET", "/workspaces/"+r.params.ws+"/journeys/"+r.params.id, nil)
	if st != 200 {
		c.failed(r, st, adminError(st, raw))
		return
	}
	msg := ""
	if r.ctx.QueryArgs().Has("saved") {
		msg = "Saved."
	}
	c.renderJourney(r, 200, msg, "", raw, "")
}

func (c *Console) renderJourney(r *req, status int, msg, errMsg string, raw []byte, def string) {
	ws := r.params.ws
	var j journeyView
	if err := json.Unmarshal(raw, &j); err != nil {
		c.failed(r, 500, &apiError{Error: "internal-error", Message: "unreadable admin API answer"})
		return
	}
	if def == "" {
		def = journeyInput(raw)
	}
	d := journeysData{Journey: &j, Key: j.Key, Definition: def, CanEdit: r.sess.principal.Can(users.Edit, ws)}
	if !c.getAll(r, apiRead{"/workspaces/" + ws, &d.Workspace}) {
		return
	}
	c.render(r, status, "journey", pageData{Title: "Journey " + j.Name, Nav: "workspaces", Tab: "journeys", Workspace: ws, Notice: msg, Error: errMsg, Data: d})
}

// createJourney defines a new journey. PUT defines or replaces, so the
// console first reads the key: a form meant to create never silently
// replaces an existing definition (editing is the journey's own page).
func (c *Console) createJourney(r *req) {
	f := r.ctx.PostArgs()
	key, def := strings.TrimSpace(string(f.Peek("key"))), string(f.Peek("definition"))
	back := journeysData{Key: key, Definition: def}
	if !validKey(key) {
		c.renderJourneys(r, 422, "", "The journey was not created: key: 1 to 64 of a-z 0-9 _ - .", back)
		return
	}
	path := "/workspaces/" + r.params.ws + "/journeys/" + key
	if st, _ := c.b.Admin(r.actor(), "GET", path, nil); st == 200 {
		c.renderJourneys(r, 409, "", "The journey was not created: a journey with the key "+key+" exists; edit it on its own page.", back)
		return
	}
	st, ans := c.b.Admin(r.actor(), "PUT", path, []byte(def))
	if st >= 300 {
		e := adminError(st, ans)
		if st == 404 && e.Error == "not-found" {
			c.notFound(r)
			return
		}
		c.renderJourneys(r, 422, "", "The journey was not created: "+e.Message+" ("+e.Error+")", back)
		return
	}
	c.redirect(r, Prefix+"workspaces/"+r.params.ws+"/journeys/"+key+"?saved=1")
}

// updateJourney replaces the definition (policy_version + 1).
func (c *Console) updateJourney(r *req) {
	def := string(r.ctx.PostArgs().Peek("definition"))
	path := "/workspaces/" + r.params.ws + "/journeys/" + r.params.id
	cur, raw := c.b.Admin(r.actor(), "GET", path, nil)
	if cur != 200 {
		c.failed(r, cur, adminError(cur, raw))
		return
	}
	st, ans := c.b.Admin(r.actor(), "PUT", path, []byte(def))
	if st >= 300 {
		e := adminError(st, ans)
		c.renderJourney(r, 422, "", "The journey was not changed: "+e.Message+" ("+e.Error+")", raw, def)
		return
	}
	c.redirect(r, Prefix+"workspaces/"+r.params.ws+"/journeys/"+r.params.id+"?saved=1")
}

func (c *Console) deleteJourney(r *req) {
	st, ans := c.b.Admin(r.actor(), "DELETE", "/workspaces/"+r.params.ws+"/journeys/"+r.params.id, nil)
	if st >= 300 {
		c.failed(r, st, adminError(st, ans))
		return
	}
	c.renderJourneys(r, 200, "Journey "+r.params.id+" deleted.", "", journeysData{Definition: journeyExample})
}

// validKey accepts a journey key as the journeys module does (1 to 64 of
// a-z 0-9 _ - .), and no segment of dots that could change an admin path.
func validKey(s string) bool {
	if s == "" || len(s) > 64 || strings.Trim(s, ".") == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_' || ch == '.') {
			return false
		}
	}
	return true
}

// adminError reads an admin API error answer.
func adminError(st int, ans []byte) *apiError {
	e := &apiError{}
	if json.Unmarshal(ans, e) != nil || e.Error == "" {
		e = &apiError{Error: "internal-error", Message: "the admin API answered " + strconv.Itoa(st)}
	}
	return e
}

// ---- Branding profiles ----

type brandingColors struct {
	Primary    string `json:"primary"`
	Background string `json:"background"`
	Text       string `json:"text"`
	Accent     string `json:"accent"`
}

type brandingView struct {
	ProfileID    string         `json:"profile_id"`
	Name         string         `json:"name"`
	Colors       brandingColors `json:"colors"`
	CSSVariables string         `json:"css_variables"`
	Logo         *struct {
		Version string            `json:"version"`
		URLs    map[string]string `json:"urls"`
	} `json:"logo"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Logo is the public path of the logo at size ("" without a logo).
func (b brandingView) LogoURL(size string) string {
	if b.Logo == nil {
		return ""
	}
	return b.Logo.URLs[size]
}

var hexColor = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)

// Swatch is a data: URL of an SVG square of colour col (a #rrggbb the
// admin API normalised; anything else gives no swatch). An image, not an
// inline style, so the console's CSP stays without 'unsafe-inline'.
func (brandingView) Swatch(col string) template.URL {
	if !hexColor.MatchString(col) {
		return ""
	}
	svg := `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16"><rect width="16" height="16" fill="` + col + `" stroke="#888"/></svg>`
	return template.URL("data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString([]byte(svg)))
}

type colorField struct{ Key, Label, Value string }

type brandingData struct {
	Workspace workspaceView
	Profiles  []brandingView
	Profile   *brandingView
	CanEdit   bool
	// Name and Colors are the form's values.
	Name   string
	Colors []colorField
}

func colorFields(c brandingColors) []colorField {
	return []colorField{{"primary", "Primary colour", c.Primary}, {"background", "Background colour", c.Background},
		{"text", "Text colour", c.Text}, {"accent", "Accent colour", c.Accent}}
}

func (c *Console) branding(r *req) {
	c.renderBranding(r, 200, "", "", brandingData{Colors: colorFields(brandingColors{})})
}

func (c *Console) renderBranding(r *req, status int, msg, errMsg string, d brandingData) {
	ws := r.params.ws
	d.CanEdit = r.sess.principal.Can(users.Edit, ws)
	base := "/workspaces/" + ws
	var bl struct {
		Profiles []brandingView `json:"profiles"`
	}
	if !c.getAll(r, apiRead{base, &d.Workspace}, apiRead{base + "/branding-profiles", &bl}) {
		return
	}
	d.Profiles = bl.Profiles
	c.render(r, status, "branding", pageData{Title: "Branding profiles", Nav: "workspaces", Tab: "branding", Workspace: ws, Notice: msg, Error: errMsg, Data: d})
}

// brandingForm reads the name and colour fields of a profile form.
func brandingForm(get func(string) string) (map[string]any, brandingData) {
	col := brandingColors{Primary: strings.TrimSpace(get("primary")), Background: strings.TrimSpace(get("background")),
		Text: strings.TrimSpace(get("text")), Accent: strings.TrimSpace(get("accent"))}
	name := get("name")
	return map[string]any{"name": name, "colors": col}, brandingData{Name: name, Colors: colorFields(col)}
}

func (c *Console) createBranding(r *req) {
	f := r.ctx.PostArgs()
	body, back := brandingForm(func(k string) string { return string(f.Peek(k)) })
	var p brandingView
	st, e := c.call(r, "POST", "/workspaces/"+r.params.ws+"/branding-profiles", body, &p)
	if c.refused(r, st, e, func(e *apiError) {
		c.renderBranding(r, 422, "", "The profile was not created: "+e.Message, back)
	}) {
		return
	}
	c.redirect(r, Prefix+"workspaces/"+r.params.ws+"/branding/"+p.ProfileID+"?saved=1")
}

func (c *Console) brandingProfile(r *req) {
	msg := ""
	if r.ctx.QueryArgs().Has("saved") {
		msg = "Saved."
	}
	c.renderProfile(r, 200, msg, "", nil)
}

// renderProfile shows one profile: its edit form (back holds refused
// values), its logo preview and the upload form.
func (c *Console) renderProfile(r *req, status int, msg, errMsg string, back *brandingData) {
	ws := r.params.ws
	var p brandingView
	base := "/workspaces/" + ws
	d := brandingData{CanEdit: r.sess.principal.Can(users.Edit, ws)}
	if !c.getAll(r, apiRead{base, &d.Workspace}) {
		return
	}
	if !c.getAll(r, apiRead{base + "/branding-profiles/" + r.params.id, &p}) {
		return
	}
	d.Profile, d.Name, d.Colors = &p, p.Name, colorFields(p.Colors)
	if back != nil {
		d.Name, d.Colors = back.Name, back.Colors
	}
	c.render(r, status, "profile", pageData{Title: "Branding profile " + p.Name, Nav: "workspaces", Tab: "branding", Workspace: ws, Notice: msg, Error: errMsg, Data: d})
}

func (c *Console) updateBranding(r *req) {
	f := r.ctx.PostArgs()
	body, back := brandingForm(func(k string) string { return string(f.Peek(k)) })
	st, e := c.call(r, "PATCH", "/workspaces/"+r.params.ws+"/branding-profiles/"+r.params.id, body, nil)
	if c.refused(r, st, e, func(e *apiError) {
		c.renderProfile(r, 422, "", "The profile was not changed: "+e.Message, &back)
	}) {
		return
	}
	c.redirect(r, Prefix+"workspaces/"+r.params.ws+"/branding/"+r.params.id+"?saved=1")
}

// MaxLogoUpload bounds the file a logo form may carry; the admin API
// refuses anything above its own limit (2 MiB) with its own message.
const MaxLogoUpload = 3 << 20

// uploadLogo sends the form's file to the admin API's logo PUT as base64:
// the admin API decodes, checks and re-encodes it.
func (c *Console) uploadLogo(r *req) {
	form, err := r.ctx.MultipartForm()
	var img []byte
	if err == nil {
		if fh := form.File["logo"]; len(fh) == 1 && fh[0].Size <= MaxLogoUpload {
			if fd, err := fh[0].Open(); err == nil {
				img, _ = io.ReadAll(io.LimitReader(fd, MaxLogoUpload+1))
				fd.Close()
			}
		} else if len(fh) == 1 {
			c.renderProfile(r, 413, "", "The logo was not uploaded: the file is larger than 3 MiB.", nil)
			return
		}
	}
	if len(img) == 0 {
		c.renderProfile(r, 422, "", "The logo was not uploaded: choose an image file (PNG, JPEG or WebP).", nil)
		return
	}
	st, e := c.call(r, "PUT", "/workspaces/"+r.params.ws+"/branding-profiles/"+r.params.id+"/logo",
		map[string]string{"image": base64.StdEncoding.EncodeToString(img)}, nil)
	if c.refused(r, st, e, func(e *apiError) {
		c.renderProfile(r, 422, "", "The logo was not uploaded: "+e.Message+" ("+e.Error+")", nil)
	}) {
		return
	}
	c.redirect(r, Prefix+"workspaces/"+r.params.ws+"/branding/"+r.params.id+"?saved=1")
}

func (c *Console) deleteLogo(r *req) {
	st, e := c.call(r, "DELETE", "/workspaces/"+r.params.ws+"/branding-profiles/"+r.params.id+"/logo", nil, nil)
	if e != nil {
		c.failed(r, st, e)
		return
	}
	c.redirect(r, Prefix+"workspaces/"+r.params.ws+"/branding/"+r.params.id+"?saved=1")
}

// ---- Messaging preflight ----

type knob struct {
	Name, Set, Effective string
}

type messagingData struct {
	Workspace    workspaceView
	Configured   bool
	SecretsValid int
	Knobs        []knob
	UpdatedAt    time.Time
}

// messaging shows what the workspace's messaging preflight is configured
// with. The preflight's counters and prefix blocks live in the cluster's
// actors and the admin API has no read of them, so they are not shown.
func (c *Console) messaging(r *req) {
	ws := r.params.ws
	d := messagingData{}
	base := "/workspaces/" + ws
	if !c.getAll(r, apiRead{base, &d.Workspace}) {
		return
	}
	var set struct {
		Policy          map[string]any `json:"policy"`
		EffectivePolicy map[string]any `json:"effective_policy"`
		SecretsValid    int            `json:"secrets_valid"`
		UpdatedAt       time.Time      `json:"updated_at"`
	}
	st, e := c.call(r, "GET", base+"/messaging", nil, &set)
	switch {
	case e == nil:
		d.Configured, d.SecretsValid, d.UpdatedAt = true, set.SecretsValid, set.UpdatedAt
		names := map[string]bool{}
		for k := range set.EffectivePolicy {
			names[k] = true
		}
		for k := range set.Policy {
			names[k] = true
		}
		keys := make([]string, 0, len(names))
		for k := range names {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			kn := knob{Name: k, Set: field(set.Policy, k), Effective: field(set.EffectivePolicy, k)}
			if kn.Set == "" || kn.Set == "0" {
				kn.Set = "default"
			}
			d.Knobs = append(d.Knobs, kn)
		}
	case st == 404 && e.Error == "messaging-settings-not-found":
		// messaging-settings-not-found: nothing is configured.
	default:
		c.failed(r, st, e)
		return
	}
	c.render(r, 200, "messaging", pageData{Title: "Messaging preflight", Nav: "workspaces", Tab: "messaging", Workspace: ws, Data: d})
}
