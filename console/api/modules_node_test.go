package api_test

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"io"
	"mime/multipart"
	nethttp "net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/trustd/trustd/node"
	"github.com/trustd/trustd/node/nodetest"
)

// postFile posts a multipart form with one file in field "logo".
func (cc *consoleClient) postFile(path string, fields map[string]string, file []byte) (int, nethttp.Header, string) {
	cc.t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	for k, v := range fields {
		w.WriteField(k, v)
	}
	fw, _ := w.CreateFormFile("logo", "logo.png")
	fw.Write(file)
	w.Close()
	req, _ := nethttp.NewRequest("POST", cc.base+path, &body)
	req.Header.Set("Content-Type", w.FormDataContentType())
	resp, err := cc.hc.Do(req)
	if err != nil {
		cc.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func testPNG(t *testing.T, w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.NRGBA{uint8(x * 4), 80, uint8(y * 4), 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestConsoleModulePagesOnARealNode drives the pages of the modules that
// landed after the first console against a real node: a journey defined
// and edited (the journeys module's validation answers a bad definition),
// an escalated journey's review case resolved by an approver (and refused
// to an editor), a branding profile created with a logo uploaded and
// served at the preview's address, and the messaging page before and
// after a policy exists.
func TestConsoleModulePagesOnARealNode(t *testing.T) {
	e := startDevNode(t)
	ws := e.dev.WorkspaceID
	wsPage := "/console/workspaces/" + ws
	cc := newConsoleClient(t, e.Node)
	_, csrf := cc.login(e.N.AdminToken())

	// Journeys: define, refuse a bad definition with the module's message, edit.
	def := `{"name":"Step up","method":"human_verification","requested_assurance":"none","consent":{"required":false,"version":""},"requirements":{"identity":false,"liveness":false,"authorization":false,"operation_binding":false}}`
	st, h, body := cc.do("POST", wsPage+"/journeys", url.Values{"csrf": {csrf}, "key": {"step.up"}, "definition": {def}})
	if st != 303 || h.Get("Location") != wsPage+"/journeys/step.up?saved=1" {
		t.Fatalf("create journey: %d %s", st, body)
	}
	st, _, body = cc.do("POST", wsPage+"/journeys", url.Values{"csrf": {csrf}, "key": {"bad"}, "definition": {strings.Replace(def, `"authorization":false`, `"authorization":true`, 1)}})
	if st != 422 || !strings.Contains(body, "The journey was not created: method: human_verification cannot authorize an operation") {
		t.Fatalf("bad journey: %d %s", st, body)
	}
	if st, _, _ := cc.do("POST", wsPage+"/journeys", url.Values{"csrf": {csrf}, "key": {"step.up"}, "definition": {def}}); st != 409 {
		t.Fatalf("create over an existing key: %d, want 409", st)
	}
	if st, _, body = cc.do("GET", wsPage+"/journeys/step.up", nil); st != 200 || !strings.Contains(body, `class="policy-version">1<`) {
		t.Fatalf("journey page: %d %s", st, body)
	}
	st, _, _ = cc.do("POST", wsPage+"/journeys/step.up", url.Values{"csrf": {csrf}, "definition": {strings.Replace(def, "Step up", "Step up 2", 1)}})
	var j struct {
		Name          string `json:"name"`
		PolicyVersion int    `json:"policy_version"`
	}
	e.Admin("GET", "/workspaces/"+ws+"/journeys/step.up", nil).Decode(t, &j)
	if st != 303 || j.Name != "Step up 2" || j.PolicyVersion != 2 {
		t.Fatalf("edit journey: %d %+v", st, j)
	}

	// Review queue: an escalated journey opens a case; an approver resolves it.
	var start struct {
		SessionToken string `json:"session_token"`
	}
	if r := e.post("/journeys/start", map[string]any{"journey_key": "step.up", "action": "pay"}); r.Status != 200 {
		t.Fatalf("start: %d %s", r.Status, r.Body)
	} else {
		r.Decode(t, &start)
	}
	if r := e.post("/journeys/escalate", map[string]any{"session_token": start.SessionToken, "reason_code": "stuck"}); r.Status != 200 {
		t.Fatalf("escalate: %d %s", r.Status, r.Body)
	}
	st, _, body = cc.do("GET", wsPage+"/reviews", nil)
	m := regexp.MustCompile(`id="case-([A-Za-z0-9_-]+)"`).FindStringSubmatch(body)
	if st != 200 || m == nil {
		t.Fatalf("reviews page: %d %s", st, body)
	}
	caseID := m[1]
	users := "/workspaces/" + ws + "/console-users"
	e.MustCreate(users, map[string]any{"email": "rev@x.io", "role": "approver", "password": "approver password 1"}, &struct{}{})
	e.MustCreate(users, map[string]any{"email": "ed@x.io", "role": "editor", "password": "editor password 12"}, &struct{}{})
	login := func(email, pw string) (*consoleClient, string) {
		c := newConsoleClient(t, e.Node)
		_, _, page := c.do("GET", "/console/login", nil)
		if st, _, body := c.do("POST", "/console/login", c.loginForm(page, url.Values{"email": {email}, "password": {pw}})); st != 303 {
			t.Fatalf("%s login: %d %s", email, st, body)
		}
		_, _, home := c.do("GET", "/console/", nil)
		return c, c.csrf(home)
	}
	ed, edCSRF := login("ed@x.io", "editor password 12")
	if st, _, _ := ed.do("POST", wsPage+"/reviews/"+caseID+"/resolve", url.Values{"csrf": {edCSRF}, "decision": {"verified"}}); st != 403 {
		t.Fatalf("editor resolves a case: %d, want 403", st)
	}
	if _, _, body := ed.do("GET", wsPage+"/reviews", nil); strings.Contains(body, `name="decision"`) {
		t.Fatal("the editor is offered the resolve form")
	}
	rev, revCSRF := login("rev@x.io", "approver password 1")
	st, _, body = rev.do("POST", wsPage+"/reviews/"+caseID+"/resolve", url.Values{"csrf": {revCSRF}, "decision": {"rejected"}, "note": {"operation not recognised"}})
	if st != 200 || !strings.Contains(body, "resolved.") {
		t.Fatalf("approver resolves: %d %s", st, body)
	}
	var kase struct {
		Status     string `json:"status"`
		Decision   string `json:"decision"`
		Note       string `json:"note"`
		ResolvedBy string `json:"resolved_by"`
	}
	e.Admin("GET", "/workspaces/"+ws+"/reviews/"+caseID, nil).Decode(t, &kase)
	if kase.Status != "resolved" || kase.Decision != "rejected" || kase.ResolvedBy != "rev@x.io" || kase.Note != "operation not recognised" {
		t.Fatalf("case after the console resolved it: %+v", kase)
	}
	if st, _, body := rev.do("POST", wsPage+"/reviews/"+caseID+"/resolve", url.Values{"csrf": {revCSRF}, "decision": {"verified"}}); st != 422 || !strings.Contains(body, "was not resolved") {
		t.Fatalf("resolving a closed case: %d", st)
	}

	// Branding: create, upload a logo, the preview's address serves it.
	st, h, body = cc.do("POST", wsPage+"/branding", url.Values{"csrf": {csrf}, "name": {"Main"}, "primary": {"#0A58CA"}})
	loc := regexp.MustCompile(`/branding/([0-9a-f-]+)\?saved=1$`).FindStringSubmatch(h.Get("Location"))
	if st != 303 || loc == nil {
		t.Fatalf("create profile: %d %q %s", st, h.Get("Location"), body)
	}
	prof := wsPage + "/branding/" + loc[1]
	if st, _, body := cc.do("POST", wsPage+"/branding", url.Values{"csrf": {csrf}, "name": {"Bad"}, "primary": {"blue"}}); st != 422 || !strings.Contains(body, "The profile was not created") {
		t.Fatalf("bad colour: %d %s", st, body)
	}
	if st, _, body := cc.postFile(prof+"/logo", map[string]string{"csrf": csrf}, []byte("GIF89a not an image")); st != 422 || !strings.Contains(body, "The logo was not uploaded") {
		t.Fatalf("bad logo: %d %s", st, body)
	}
	if st, _, body := cc.postFile(prof+"/logo", map[string]string{"csrf": csrf}, testPNG(t, 48, 32)); st != 303 {
		t.Fatalf("upload logo: %d %s", st, body)
	}
	_, _, body = cc.do("GET", prof, nil)
	src := regexp.MustCompile(`<img class="logo" src="([^"]+)"`).FindStringSubmatch(body)
	if src == nil || !strings.Contains(body, "#0a58ca") {
		t.Fatalf("profile page without a logo preview:\n%s", body)
	}
	logoURL := strings.ReplaceAll(src[1], "&amp;", "&")
	resp, err := nethttp.Get(e.N.APIURL() + logoURL)
	if err != nil {
		t.Fatal(err)
	}
	img, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" || !bytes.HasPrefix(img, []byte("\x89PNG")) {
		t.Fatalf("logo at the preview's address %s: %d %q", logoURL, resp.StatusCode, resp.Header.Get("Content-Type"))
	}

	// Concurrency: live holders read from the slots' owner, on the admin
	// API (validated against the contract) and the console page.
	var k struct {
		ID string `json:"constraint_id"`
	}
	e.MustCreate("/workspaces/"+ws+"/concurrency-constraints", map[string]any{"name": "exports", "action_pattern": "export.*", "capacity": 3}, &k)
	for i := 0; i < 2; i++ {
		if r := e.post("/concurrency/acquire", map[string]any{"action": "export.report"}); r.Status != 200 || !strings.Contains(string(r.Body), `"acquired":true`) {
			t.Fatalf("acquire: %d %s", r.Status, r.Body)
		}
	}
	var hs struct {
		Enumerable bool `json:"enumerable"`
		InUse      int  `json:"in_use"`
	}
	e.Admin("GET", "/workspaces/"+ws+"/concurrency-constraints/"+k.ID+"/holders", nil).Decode(t, &hs)
	if !hs.Enumerable || hs.InUse != 2 {
		t.Fatalf("holders: %+v", hs)
	}
	// Another workspace's admin path cannot read this constraint's
	// holders, and the holders need the admin token.
	var other struct {
		ID string `json:"workspace_id"`
	}
	e.MustCreate("/workspaces", map[string]any{"name": "other"}, &other)
	if r := e.Admin("GET", "/workspaces/"+other.ID+"/concurrency-constraints/"+k.ID+"/holders", nil); r.Status != 404 {
		t.Fatalf("holders through another workspace: %d %s", r.Status, r.Body)
	}
	if r := e.Do("GET", "/admin/v1/workspaces/"+ws+"/concurrency-constraints/"+k.ID+"/holders", "", nil); r.Status != 401 {
		t.Fatalf("holders without the admin token: %d %s", r.Status, r.Body)
	}
	if _, _, body := cc.do("GET", wsPage+"/concurrency", nil); !strings.Contains(body, "<td>exports</td><td>workspace</td><td>export.*</td><td>3</td><td>2</td><td>workspace: 2</td>") {
		t.Fatalf("concurrency page:\n%s", body)
	}

	// Messaging: not configured, then the policy the admin API set.
	if _, _, body := cc.do("GET", wsPage+"/messaging", nil); !strings.Contains(body, "not configured") {
		t.Fatalf("messaging page before settings:\n%s", body)
	}
	if r := e.Admin("PUT", "/workspaces/"+ws+"/messaging/policy", map[string]any{"policy": map[string]any{"prefix_limit": 7}}); r.Status != 200 {
		t.Fatalf("messaging policy: %d %s", r.Status, r.Body)
	}
	if _, _, body := cc.do("GET", wsPage+"/messaging", nil); !strings.Contains(body, "<code>prefix_limit</code></td><td>7</td><td>7</td>") {
		t.Fatalf("messaging page after settings:\n%s", body)
	}
}

// devNode is a --dev node and its seeded credentials.
type devNode struct {
	*nodetest.Node
	dev *node.DevCredentials
}

func startDevNode(t *testing.T) *devNode {
	t.Helper()
	tn := nodetest.Start(t, func(c *node.Config) { c.Dev = true })
	return &devNode{Node: tn, dev: tn.N.Dev()}
}

// post posts body to a public path with the dev site's secret.
func (e *devNode) post(path string, body map[string]any) nodetest.Response {
	e.T.Helper()
	if _, ok := body["secret"]; !ok {
		body["secret"] = e.dev.Secret
	}
	return e.Do("POST", "/v1"+path, "", body)
}
