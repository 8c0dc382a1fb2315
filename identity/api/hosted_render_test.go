package api

import (
	"bytes"
	"strings"
	"testing"

	"github.com/trustd/trustd/console/branding"
	"github.com/trustd/trustd/platform/catalog"
)

// The hosted page's template escapes what a profile may hold (a name may
// contain <, > and quotes) and puts colours only in the linked stylesheet,
// never in the page: no <style>, no style attribute.
func TestHostedPageRendersBrandingSafely(t *testing.T) {
	p := branding.Profile{ID: "0b6c2f9e-6d57-4c1e-9d3c-3b8f2a7a1c11", Name: `Acme "><script>alert(1)</script>`,
		Colors: catalog.BrandingColors{Primary: "#a1b2c3"}, LogoVersion: "v1"}
	var b bytes.Buffer
	if err := hostedPageTmpl.Execute(&b, &struct{ Brand *branding.View }{p.View(256)}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		`<link rel="stylesheet" href="/v1/branding/` + p.ID + `/theme.css?v=` + p.StyleVersion() + `">`,
		`<img class="brand-logo" src="/v1/branding/` + p.ID + `/logo?v=v1&amp;size=256" alt="Acme &#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;">`,
	} {
		if !strings.Contains(page, want) {
			t.Fatalf("no %s in\n%s", want, page)
		}
	}
	for _, bad := range []string{"<script>alert", "<style", "style=", "#a1b2c3"} {
		if strings.Contains(page, bad) {
			t.Fatalf("%q in the page", bad)
		}
	}
	b.Reset()
	if err := hostedPageTmpl.Execute(&b, &struct{ Brand *branding.View }{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "branding") || strings.Contains(b.String(), "brand-logo") || !strings.Contains(b.String(), `<main id="app" aria-busy="true">`) {
		t.Fatalf("unbranded page:\n%s", b.String())
	}
}
