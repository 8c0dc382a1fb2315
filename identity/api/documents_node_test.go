package api_test

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/png"
	"math/rand"
	"os/exec"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/trustd/trustd/identity/documents"
	"github.com/trustd/trustd/identity/documents/fixture"
	"github.com/trustd/trustd/node/nodetest"
)

type docEnv struct {
	*nodetest.Node
	secret, sandboxSecret, credential, wrongScope string
}

func startDocEnv(t *testing.T) *docEnv {
	tn := nodetest.Start(t)
	var ws struct {
		WorkspaceID string `json:"workspace_id"`
	}
	tn.MustCreate("/workspaces", map[string]any{"name": "docs"}, &ws)
	p := "/workspaces/" + ws.WorkspaceID
	var site, sbx struct {
		Secret string `json:"secret"`
	}
	tn.MustCreate(p+"/sites", map[string]any{"name": "prod", "hostnames": []string{"shop.example"}, "environment": "production"}, &site)
	tn.MustCreate(p+"/sites", map[string]any{"name": "sbx", "hostnames": []string{"localhost"}, "environment": "sandbox"}, &sbx)
	var cred, other struct {
		Credential string `json:"credential"`
	}
	tn.MustCreate(p+"/credentials", map[string]any{"name": "id", "scopes": []string{"identity.document.verify"}}, &cred)
	tn.MustCreate(p+"/credentials", map[string]any{"name": "sv", "scopes": []string{"site.verify"}}, &other)
	return &docEnv{Node: tn, secret: site.Secret, sandboxSecret: sbx.Secret, credential: cred.Credential, wrongScope: other.Credential}
}

func (e *docEnv) verify(bearer string, body map[string]any) (nodetest.Response, documents.DocumentResult) {
	e.T.Helper()
	r := e.Do("POST", "/v1/documents/verify", bearer, body)
	var res documents.DocumentResult
	if r.Status == 200 {
		if err := json.Unmarshal(r.Body, &res, json.RejectUnknownMembers(true)); err != nil {
			e.T.Fatalf("result does not match the 2.9 shape: %v: %s", err, r.Body)
		}
	}
	return r, res
}

func pngB64(g image.Image) string {
	var b bytes.Buffer
	_ = png.Encode(&b, g)
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

func TestDocumentsVerifyOnRealPixels(t *testing.T) {
	if _, err := exec.LookPath("tesseract"); err != nil {
		t.Skip("tesseract not installed (apt-get install tesseract-ocr)")
	}
	f, err := fixture.LoadOCRB()
	if err != nil {
		t.Skip(err)
	}
	e := startDocEnv(t)
	r := rand.New(rand.NewSource(7))
	h := fixture.RandomHolder(r)
	page := fixture.RenderTD3(f, h.TD3("UTO"), r)

	t.Run("a clean page: every check runs, the 2.9 shape holds, the boundary is honest", func(t *testing.T) {
		resp, res := e.verify(e.credential, map[string]any{"country": "UTO", "document_type": "passport", "front_image": fixture.B64(fixture.PNG(page))})
		v := res.Verification
		if resp.Status != 200 || !res.Success || v.Provider == "" || v.Checks.ImageQuality.Status != "passed" ||
			(v.Checks.MRZ.Status != "valid" && v.Checks.MRZ.Status != "passed_with_corrections") ||
			v.Checks.AuthoritativeSource.Status != "not_performed" ||
			v.AssuranceBoundary.DocumentAuthenticity != "native-screening-signals" || v.AssuranceBoundary.AuthoritativeSource != "not-performed" {
			t.Fatalf("%d %s", resp.Status, resp.Body)
		}
		if v.Checks.MRZ.Status == "passed_with_corrections" && v.Risk.Decision != "review" {
			t.Fatalf("a corrected read decided %s", v.Risk.Decision)
		}
		if v.Checks.MRZ.Status == "valid" && v.Risk.Decision != "verify" {
			t.Fatalf("a clean valid read decided %s: %s", v.Risk.Decision, resp.Body)
		}
		if strings.Contains(string(resp.Body), h.Number) {
			t.Fatal("the full document number is echoed")
		}
	})
	t.Run("the legacy body secret works too; a blurred page asks for a recapture with a user message", func(t *testing.T) {
		resp, res := e.verify("", map[string]any{"secret": e.secret, "country": "UTO", "document_type": "passport",
			"front_image": fixture.B64(fixture.PNG(fixture.BoxBlur(page, 4)))})
		if resp.Status != 200 || res.Verification.Risk.Decision != "recapture" || res.Verification.Risk.UserMessage == "" ||
			res.Verification.Checks.ImageQuality.Status != "failed" {
			t.Fatalf("%d %s", resp.Status, resp.Body)
		}
	})
	t.Run("claimed country differs from the MRZ issuer: review", func(t *testing.T) {
		resp, res := e.verify(e.credential, map[string]any{"country": "FRA", "document_type": "passport", "front_image": fixture.B64(fixture.PNG(page))})
		if resp.Status != 200 || res.Verification.Risk.Decision == "verify" {
			t.Fatalf("%d %s", resp.Status, resp.Body)
		}
	})
}

func TestDocumentsVerifyRefusals(t *testing.T) {
	e := startDocEnv(t)
	small := image.NewGray(image.Rect(0, 0, 400, 400))
	good := pngB64(small)
	// A decompression bomb: a 8001×8001 PNG of zeros compresses to a few
	// kilobytes; the header alone must refuse it.
	var bomb bytes.Buffer
	_ = png.Encode(&bomb, image.NewGray(image.Rect(0, 0, 8001, 8001)))
	var truncated bytes.Buffer
	_ = png.Encode(&truncated, image.NewGray(image.Rect(0, 0, 900, 700)))
	trunc := truncated.Bytes()[:truncated.Len()/2]
	tests := []struct {
		name, bearer string
		body         map[string]any
		status       int
		code         string
	}{
		{"no credential", "", map[string]any{"country": "UTO", "document_type": "passport", "front_image": good}, 401, "unauthorized"},
		{"a credential without identity.document.verify", e.wrongScope, map[string]any{"country": "UTO", "document_type": "passport", "front_image": good}, 403, "forbidden"},
		{"bad country shape", e.credential, map[string]any{"country": "uto", "document_type": "passport", "front_image": good}, 400, "invalid-country"},
		{"unknown document type", e.credential, map[string]any{"country": "UTO", "document_type": "library_card", "front_image": good}, 400, "invalid-document-type"},
		{"licence outside USA/CAN", e.credential, map[string]any{"country": "FRA", "document_type": "driving_licence", "front_image": good, "back_image": good}, 400, "invalid-document-type"},
		{"licence without back", e.credential, map[string]any{"country": "USA", "document_type": "driving_licence", "front_image": good}, 400, "missing-back-image"},
		{"not base64", e.credential, map[string]any{"country": "UTO", "document_type": "passport", "front_image": "%%%"}, 400, "invalid-image-encoding"},
		{"wrong type (GIF)", e.credential, map[string]any{"country": "UTO", "document_type": "passport", "front_image": base64.StdEncoding.EncodeToString([]byte("GIF89a\x01\x00\x01\x00"))}, 400, "unsupported-image-format"},
		{"wrong type (text)", e.credential, map[string]any{"country": "UTO", "document_type": "passport", "front_image": base64.StdEncoding.EncodeToString([]byte("hello world"))}, 400, "unsupported-image-format"},
		{"decompression bomb", e.credential, map[string]any{"country": "UTO", "document_type": "passport", "front_image": base64.StdEncoding.EncodeToString(bomb.Bytes())}, 400, "image-too-large"},
		{"truncated PNG", e.credential, map[string]any{"country": "UTO", "document_type": "passport", "front_image": base64.StdEncoding.EncodeToString(trunc)}, 400, "malformed-image"},
		{"too small", e.credential, map[string]any{"country": "UTO", "document_type": "passport", "front_image": pngB64(image.NewGray(image.Rect(0, 0, 100, 100)))}, 400, "image-too-small"},
		{"sandbox with an undocumented country", "", map[string]any{"secret": e.sandboxSecret, "country": "UTO", "document_type": "passport", "front_image": good}, 400, "invalid-country"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := e.verify(tc.bearer, tc.body)
			if r.Status != tc.status || r.ErrorCode(t) != tc.code {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		})
	}
	t.Run("the raised body limit applies to this route only", func(t *testing.T) {
		// 3 MiB: over the server's 1 MiB default, under the route's limit.
		big := strings.Repeat("A", 3<<20-1) + "%"
		if r := e.Do("POST", "/v1/documents/verify", e.credential, `{"country":"UTO","document_type":"passport","front_image":"`+big+`"}`); r.Status != 400 || r.ErrorCode(t) != "invalid-image-encoding" {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		if r := e.Do("POST", "/v1/api-protection/assess", e.credential, `{"method":"GET","path":"/`+strings.Repeat("a", 2<<20)+`"}`); r.Status != 413 {
			t.Fatalf("another route took a 2 MiB body: %d", r.Status)
		}
	})
}

func TestDocumentsSandbox(t *testing.T) {
	e := startDocEnv(t)
	img := pngB64(image.NewGray(image.Rect(0, 0, 400, 400)))
	for country, want := range map[string]string{"ZZV": "verify", "ZZC": "recapture", "ZZR": "review", "ZZJ": "reject"} {
		resp, res := e.verify("", map[string]any{"secret": e.sandboxSecret, "country": country, "document_type": "passport", "front_image": img})
		if resp.Status != 200 || res.Verification.Risk.Decision != want || !res.Verification.Sandbox ||
			res.Verification.Checks.AuthoritativeSource.Status != "not_performed" {
			t.Fatalf("%s: %d %s", country, resp.Status, resp.Body)
		}
	}
	r, _ := e.verify("", map[string]any{"secret": e.sandboxSecret, "country": "ZZU", "document_type": "passport", "front_image": img})
	if r.Status != 503 || r.ErrorCode(t) != "service-unavailable" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	// Production credentials never reach the simulator: ZZV is just a
	// country, and a blank page is not a document.
	resp, res := e.verify(e.credential, map[string]any{"country": "ZZV", "document_type": "passport", "front_image": img})
	if resp.Status != 200 || res.Verification.Risk.Decision == "verify" || res.Verification.Sandbox {
		t.Fatalf("%d %s", resp.Status, resp.Body)
	}
}

func TestDocumentsSupported(t *testing.T) {
	e := startDocEnv(t)
	r := e.Do("GET", "/v1/documents/supported", "", nil)
	var s struct {
		Documents []struct {
			Type  string   `json:"document_type"`
			Sides []string `json:"sides"`
		} `json:"documents"`
		Formats      []string `json:"formats"`
		Budget       int64    `json:"decode_budget_bytes"`
		BudgetWaitMS int64    `json:"decode_budget_wait_ms"`
		Cost         string   `json:"decode_cost"`
	}
	r.Decode(t, &s)
	if r.Status != 200 || len(s.Documents) != len(documents.Supported) || len(s.Formats) != 3 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	// The decode limits are stated (issue 24 item 5).
	if s.Budget != documents.DefaultDecodeBudget || s.BudgetWaitMS != documents.DefaultBudgetWait.Milliseconds() || !strings.Contains(s.Cost, "16-bit PNG 0") {
		t.Fatalf("decode limits not stated: %s", r.Body)
	}
}
