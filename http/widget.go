package http

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"strconv"
	"strings"
)

// The browser widget: api.js and api.css are embedded in the binary and
// served from memory with validators, so browsers and CDNs cache them.
//
// Two URLs serve each file. The plain one (/v1/widget/api.js) always gives
// the newest widget: a short max-age plus an ETag, so an upgrade reaches
// every page within minutes and revalidation costs a 304. The versioned one
// (/v1/widget/api.js?v=<version>, version = a content hash, announced in the
// X-Widget-Version header) never changes, so it is cached for a year as
// immutable; a stale ?v= still gets the current file, with the short cache.
// api.js loads its stylesheet through the versioned URL.

//go:embed widget/api.js widget/api.css
var widgetFiles embed.FS

// cssVersionMark in api.js is replaced by the stylesheet's version.
const cssVersionMark = "__TRUSTD_CSS_VERSION__"

const (
	cacheShort     = "public, max-age=300, stale-while-revalidate=3600"
	cacheImmutable = "public, max-age=31536000, immutable"
)

// asset is one embedded file, ready to serve in both encodings.
type asset struct {
	contentType string
	version     string
	body, gz    []byte
	etag, gzTag string
}

func newAsset(contentType string, body []byte) *asset {
	sum := sha256.Sum256(body)
	version := hex.EncodeToString(sum[:8])
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(body)
	_ = zw.Close()
	return &asset{
		contentType: contentType, version: version, body: body, gz: buf.Bytes(),
		etag: `"` + version + `"`, gzTag: `"` + version + `-gz"`,
	}
}

// widgetAssets holds the served script and stylesheet.
type widgetAssets struct {
	js, css *asset
}

// loadWidgetAssets reads the embedded files and stamps the stylesheet's
// version into the script, so the script's own version covers both.
func loadWidgetAssets() widgetAssets {
	css, err := widgetFiles.ReadFile("widget/api.css")
	if err != nil {
		panic("http: embedded widget/api.css missing: " + err.Error())
	}
	js, err := widgetFiles.ReadFile("widget/api.js")
	if err != nil {
		panic("http: embedded widget/api.js missing: " + err.Error())
	}
	a := widgetAssets{css: newAsset("text/css; charset=utf-8", css)}
	js = bytes.ReplaceAll(js, []byte(cssVersionMark), []byte(a.css.version))
	a.js = newAsset("application/javascript; charset=utf-8", js)
	return a
}

// serve answers a GET of the asset: 304 when the client's copy is
// current, else the body, gzipped when the client accepts it.
func (a *asset) serve(c *Call) {
	ctx := c.Ctx
	h := &ctx.Response.Header
	gz := ctx.Request.Header.HasAcceptEncoding("gzip")
	etag := a.etag
	if gz {
		etag = a.gzTag
	}
	if v := ctx.QueryArgs().Peek("v"); string(v) == a.version {
		h.Set("Cache-Control", cacheImmutable)
	} else {
		h.Set("Cache-Control", cacheShort)
	}
	h.Set("ETag", etag)
	h.Set("Vary", "Accept-Encoding")
	h.Set("X-Widget-Version", a.version)
	h.Set("X-Content-Type-Options", "nosniff")
	// Any site may embed the widget, with Subresource Integrity too.
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Cross-Origin-Resource-Policy", "cross-origin")
	if etagMatches(string(ctx.Request.Header.Peek("If-None-Match")), a.etag, a.gzTag) {
		ctx.SetStatusCode(304)
		return
	}
	ctx.SetStatusCode(200)
	ctx.SetContentType(a.contentType)
	if gz {
		h.Set("Content-Encoding", "gzip")
		ctx.SetBody(a.gz)
		return
	}
	ctx.SetBody(a.body)
}

// etagMatches implements the weak comparison of If-None-Match (RFC 9110
// 13.1.2): any listed tag, with or without W/, or "*".
func etagMatches(header string, tags ...string) bool {
	for _, part := range strings.Split(header, ",") {
		part = strings.TrimPrefix(strings.TrimSpace(part), "W/")
		if part == "*" {
			return true
		}
		for _, t := range tags {
			if part == t {
				return true
			}
		}
	}
	return false
}

func (s *Server) widgetRoutes() []Route {
	assets := loadWidgetAssets()
	s.log.Debug("widget bundle", "version", assets.js.version,
		"js_bytes", len(assets.js.body), "js_gzip_bytes", len(assets.js.gz),
		"css_bytes", len(assets.css.body), "css_gzip_bytes", len(assets.css.gz))
	rs := []Route{
		{Method: "GET", Path: "/widget/api.js", ID: "getWidgetScript", Tag: "Widget",
			Summary: "The browser widget (" + strconv.Itoa(len(assets.js.body)) + " bytes, " + strconv.Itoa(len(assets.js.gz)) + " gzipped). " +
				"Mounts on every div.service-widget[data-sitekey] and exposes window.trustd and a Turnstile-compatible window.turnstile. " +
				"Cached 5 minutes with an ETag; with ?v=<X-Widget-Version> cached for a year as immutable. ?render=explicit turns off auto-mounting, ?onload=<fn> calls a global when ready.",
			ContentType: "application/javascript", Conditional: true,
			Handle: func(c *Call) { assets.js.serve(c) }},
		{Method: "GET", Path: "/widget/api.css", ID: "getWidgetStylesheet", Tag: "Widget",
			Summary:     "The widget's stylesheet, loaded by api.js with its script's CSP nonce. Caching as for api.js.",
			ContentType: "text/css", Conditional: true,
			Handle: func(c *Call) { assets.css.serve(c) }},
	}
	if s.cfg.Dev {
		rs = append(rs, s.demoRoutes(assets)...)
	}
	return rs
}
