package api

import (
	"strconv"

	kernel "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/verify/widget"
)

// The browser widget's files: verify/widget holds the embedded files and
// decides each answer (version, ETag, cache lifetime, 304); this file
// writes it.

// serveAsset answers a GET of an embedded widget file.
func serveAsset(c *kernel.Call, a *widget.Asset) {
	ctx := c.Ctx
	r := a.Reply(ctx.Request.Header.HasAcceptEncoding("gzip"), string(ctx.QueryArgs().Peek("v")),
		string(ctx.Request.Header.Peek("If-None-Match")))
	h := &ctx.Response.Header
	h.Set("Cache-Control", r.CacheControl)
	h.Set("ETag", r.ETag)
	h.Set("Vary", "Accept-Encoding")
	h.Set("X-Widget-Version", a.Version)
	h.Set("X-Content-Type-Options", "nosniff")
	// Any site may embed the widget, with Subresource Integrity too.
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Cross-Origin-Resource-Policy", "cross-origin")
	if r.NotModified {
		ctx.SetStatusCode(304)
		return
	}
	ctx.SetStatusCode(200)
	ctx.SetContentType(a.ContentType)
	if r.Gzip {
		h.Set("Content-Encoding", "gzip")
	}
	ctx.SetBody(r.Body)
}

// widgetRoutes are the widget's files and, with Dev, the demo.
func widgetRoutes(d Deps) []kernel.Route {
	assets, err := widget.Load()
	if err != nil {
		panic("verify/api: " + err.Error()) // the files are embedded at build time
	}
	d.Log.Debug("widget bundle", "version", assets.JS.Version,
		"js_bytes", len(assets.JS.Body), "js_gzip_bytes", len(assets.JS.Gzip),
		"css_bytes", len(assets.CSS.Body), "css_gzip_bytes", len(assets.CSS.Gzip))
	rs := []kernel.Route{
		{Method: "GET", Path: "/widget/api.js", ID: "getWidgetScript", Tag: "Widget",
			Summary: "The browser widget (" + strconv.Itoa(len(assets.JS.Body)) + " bytes, " + strconv.Itoa(len(assets.JS.Gzip)) + " gzipped). " +
				"Mounts on every div.service-widget[data-sitekey] and exposes window.trustd and a Turnstile-compatible window.turnstile. " +
				"Cached 5 minutes with an ETag; with ?v=<X-Widget-Version> cached for a year as immutable. ?render=explicit turns off auto-mounting, ?onload=<fn> calls a global when ready.",
			ContentType: "application/javascript", Conditional: true,
			Handle: func(c *kernel.Call) { serveAsset(c, assets.JS) }},
		{Method: "GET", Path: "/widget/api.css", ID: "getWidgetStylesheet", Tag: "Widget",
			Summary:     "The widget's stylesheet, loaded by api.js with its script's CSP nonce. Caching as for api.js.",
			ContentType: "text/css", Conditional: true,
			Handle: func(c *kernel.Call) { serveAsset(c, assets.CSS) }},
	}
	if d.Dev {
		rs = append(rs, demo{site: d.DemoSite}.routes(assets)...)
	}
	return rs
}
