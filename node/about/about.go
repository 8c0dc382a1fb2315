package about

import (
	"github.com/trustd/trustd/docs"
	kernel "github.com/trustd/trustd/platform/http"
)

// AreaName places the area in the contract documents: first, before the
// transport's own contract documents.
const AreaName = "node/about"

// Deps are what the area needs, from node/.
type Deps struct {
	// BaseURL is the public address clients use, without the API base
	// (http://127.0.0.1:8080).
	BaseURL string
	// NodeID names the node that answers.
	NodeID string
	// Ready reports whether the node has loaded its replicated state; a
	// node that has not answers status degraded.
	Ready func() bool
}

// ServiceInfo is the answer of GET /.
type ServiceInfo struct {
	Service string       `json:"service" required:"true"`
	Version string       `json:"version" required:"true" doc:"API version."`
	Status  string       `json:"status" required:"true" enum:"ok|degraded"`
	BaseURL string       `json:"base_url" required:"true" doc:"Canonical API base."`
	Node    string       `json:"node" doc:"The node that answered."`
	Links   ServiceLinks `json:"links" required:"true" doc:"Where the contract and the documentation are, on this node."`
}

// ServiceLinks are the absolute URLs of the documents about the API.
type ServiceLinks struct {
	OpenAPI   string `json:"openapi" required:"true" doc:"The contract, OpenAPI 3.1."`
	OpenAPI30 string `json:"openapi_3_0" required:"true" doc:"The same contract as OpenAPI 3.0.3."`
	Postman   string `json:"postman_collection" required:"true" doc:"A Postman v2.1 collection of every operation."`
	Changelog string `json:"changelog" required:"true" doc:"The contract's changelog."`
	Docs      string `json:"docs" required:"true" doc:"The user guide (Markdown): concepts, each module's calls, errors, operations."`
}

// Areas is the about area.
func Areas(d Deps) []kernel.Area {
	return []kernel.Area{{Name: AreaName, Routes: routes(d), Pages: &kernel.Pages{Prefix: "/favicon.ico", Serve: serveFavicon}}}
}

func routes(d Deps) []kernel.Route {
	return []kernel.Route{
		{Method: "GET", Path: "/", ID: "getServiceInfo", Tag: "Platform", Summary: "Service metadata.",
			Result: &ServiceInfo{}, Handle: func(c *kernel.Call) { c.OK(d.info()) }},
		{Method: "GET", Path: "/changelog.json", ID: "getChangelog", Tag: "Platform", Summary: "Machine-readable contract changelog.",
			Result: &Changelog{}, Handle: func(c *kernel.Call) { c.OK(&changelog) }},
		{Method: "GET", Path: "/docs/{page}", ID: "getDocsPage", Tag: "Platform",
			Summary:     "A page of the user guide, Markdown (start at README.md): concepts, each module's calls, errors, operations.",
			ContentType: "text/markdown", Errors: []kernel.ErrorCode{kernel.ErrNotFound}, Handle: guidePage},
	}
}

// info is the service metadata as this node sees it now.
func (d Deps) info() *ServiceInfo {
	status := "ok"
	if d.Ready != nil && !d.Ready() {
		status = "degraded"
	}
	base := d.BaseURL + kernel.PublicBase
	return &ServiceInfo{Service: kernel.ServiceName, Version: kernel.APIVersion, Status: status,
		BaseURL: base, Node: d.NodeID, Links: ServiceLinks{OpenAPI: base + "/openapi.json",
			OpenAPI30: base + "/openapi-3.0.json", Postman: base + "/postman-collection.json",
			Changelog: base + "/changelog.json", Docs: base + "/docs/" + docs.Index}}
}

// guidePage answers one page of the user guide as Markdown.
func guidePage(c *kernel.Call) {
	b, ok := docs.Page(c.Param("page"))
	if !ok {
		c.Fail(kernel.ErrNotFound, "no page "+c.Param("page")+" in the guide; start at "+docs.Index)
		return
	}
	c.Ctx.Response.Header.Set("Cache-Control", "public, max-age=300")
	c.Ctx.SetStatusCode(200)
	c.Ctx.SetContentType("text/markdown; charset=utf-8")
	c.Ctx.SetBody(b)
}
