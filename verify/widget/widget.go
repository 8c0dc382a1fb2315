// Package widget holds the browser widget (api.js, api.css), embedded in
// the binary, and what serving it decides: each file's version (a content
// hash), its ETag per encoding, the cache lifetime of a request and
// whether the client's copy is current. The transport writes the headers
// and the body it is told to. It also holds the --dev demo page's
// template and the backend checks the demo applies to a siteverify answer
// (spec 7.2). It never sees HTTP.
package widget

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"

	"github.com/trustd/trustd/platform/lib/etag"
)

// Two URLs serve each file. The plain one (/v1/widget/api.js) always gives
// the newest widget: a short max-age plus an ETag, so an upgrade reaches
// every page within minutes and revalidation costs a 304. The versioned one
// (/v1/widget/api.js?v=<version>, version = a content hash, announced in the
// X-Widget-Version header) never changes, so it is cached for a year as
// immutable; a stale ?v= still gets the current file, with the short cache.
// api.js loads its stylesheet through the versioned URL.

//go:embed api.js api.css
var files embed.FS

// cssVersionMark in api.js is replaced by the stylesheet's version.
const cssVersionMark = "__TRUSTD_CSS_VERSION__"

// Cache lifetimes of the two URLs.
const (
	CacheShort     = "public, max-age=300, stale-while-revalidate=3600"
	CacheImmutable = "public, max-age=31536000, immutable"
)

// Asset is one embedded file, ready to serve in both encodings.
type Asset struct {
	ContentType string
	Version     string
	Body, Gzip  []byte
	etag, gzTag string
}

func newAsset(contentType string, body []byte) (*Asset, error) {
	sum := sha256.Sum256(body)
	version := hex.EncodeToString(sum[:8])
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(body); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return &Asset{
		ContentType: contentType, Version: version, Body: body, Gzip: buf.Bytes(),
		etag: `"` + version + `"`, gzTag: `"` + version + `-gz"`,
	}, nil
}

// Assets are the served script and stylesheet.
type Assets struct {
	JS, CSS *Asset
}

// Load reads the embedded files and stamps the stylesheet's version into
// the script, so the script's own version covers both.
func Load() (Assets, error) {
	css, err := files.ReadFile("api.css")
	if err != nil {
		return Assets{}, fmt.Errorf("widget: embedded api.css: %w", err)
	}
	js, err := files.ReadFile("api.js")
	if err != nil {
		return Assets{}, fmt.Errorf("widget: embedded api.js: %w", err)
	}
	var a Assets
	if a.CSS, err = newAsset("text/css; charset=utf-8", css); err != nil {
		return Assets{}, err
	}
	js = bytes.ReplaceAll(js, []byte(cssVersionMark), []byte(a.CSS.Version))
	if a.JS, err = newAsset("application/javascript; charset=utf-8", js); err != nil {
		return Assets{}, err
	}
	return a, nil
}

// Reply is how to answer one GET of an asset.
type Reply struct {
	NotModified  bool   // answer 304 without a body
	CacheControl string // CacheShort or CacheImmutable
	ETag         string // of the encoding served
	Gzip         bool   // the body is Gzip (Content-Encoding: gzip)
	Body         []byte // nil when NotModified
}

// Reply decides the answer to a GET: acceptsGzip is the client's
// Accept-Encoding, version the query's v, ifNoneMatch its header.
func (a *Asset) Reply(acceptsGzip bool, version, ifNoneMatch string) Reply {
	r := Reply{CacheControl: CacheShort, ETag: a.etag, Gzip: acceptsGzip}
	if acceptsGzip {
		r.ETag = a.gzTag
	}
	if version == a.Version {
		r.CacheControl = CacheImmutable
	}
	if etag.Matches(ifNoneMatch, a.etag, a.gzTag) {
		r.NotModified = true
		return r
	}
	r.Body = a.Body
	if acceptsGzip {
		r.Body = a.Gzip
	}
	return r
}
