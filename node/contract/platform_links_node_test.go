package contract_test

import (
	"bytes"
	"io"
	nethttp "net/http"
	"os"
	"strings"
	"testing"

	"github.com/trustd/trustd/node/nodetest"
)

// TestServiceInfoLinksTheContractsAndTheGuide: GET /v1 links the
// contracts, the Postman collection, the changelog and the user guide, and
// each link answers.
func TestServiceInfoLinksTheContractsAndTheGuide(t *testing.T) {
	tn := nodetest.Start(t)
	var info struct {
		Links map[string]string `json:"links"`
	}
	tn.Do("GET", "/v1", "", nil).Decode(t, &info)
	for _, k := range []string{"openapi", "openapi_3_0", "postman_collection", "changelog", "docs"} {
		link := info.Links[k]
		if link == "" {
			t.Fatalf("no %s link: %v", k, info.Links)
		}
		path := link[strings.Index(link, "/v1/"):]
		if r := tn.Do("GET", path, "", nil); r.Status != 200 || len(r.Body) < 100 {
			t.Fatalf("%s (%s): %d", k, link, r.Status)
		}
	}
	guide, err := os.ReadFile("../../docs/README.md")
	if err != nil {
		t.Fatal(err)
	}
	if r := tn.Do("GET", "/v1/docs/README.md", "", nil); !bytes.Equal(r.Body, guide) {
		t.Fatal("GET /v1/docs/README.md is not docs/README.md")
	}
	for _, p := range []string{"/v1/docs/nope.md", "/v1/docs/..%2Fgo.mod", "/v1/docs/docs.go"} {
		if r := tn.Do("GET", p, "", nil); r.Status != 404 {
			t.Fatalf("%s: %d %s", p, r.Status, r.Body)
		}
	}
}

// TestFaviconIsServed: browsers ask every origin for /favicon.ico.
func TestFaviconIsServed(t *testing.T) {
	tn := nodetest.Start(t)
	resp, err := nethttp.Get(tn.N.APIURL() + "/favicon.ico")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	// An ICO directory of one image, holding a PNG.
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/x-icon" ||
		!bytes.HasPrefix(b, []byte{0, 0, 1, 0, 1, 0}) || !bytes.Contains(b, []byte("\x89PNG")) {
		t.Fatalf("%d %s % x", resp.StatusCode, resp.Header.Get("Content-Type"), b[:min(len(b), 16)])
	}
}
