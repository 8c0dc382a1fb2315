package http

import (
	"sync"

	"github.com/go-json-experiment/json"
)

// contractCache renders the generated documents once: the route table
// never changes while the server runs.
type contractCache struct {
	once                       sync.Once
	openapi, openapi30, postmn []byte
}

func (s *Server) contracts() *contractCache {
	cc := &s.mods.contract
	cc.once.Do(func() {
		doc := s.openAPI()
		cc.openapi, _ = json.Marshal(doc, json.Deterministic(true))
		cc.openapi30, _ = json.Marshal(openAPI30(doc), json.Deterministic(true))
		cc.postmn, _ = json.Marshal(s.postman(), json.Deterministic(true))
	})
	return cc
}

// contractRoutes serve the documents the route table renders. The service
// metadata, the changelog and the guide are node/about's.
func (s *Server) contractRoutes() []Route {
	doc := func(id, path, summary string, body func(*contractCache) []byte) Route {
		return Route{Method: "GET", Path: path, ID: id, Tag: "Platform", Summary: summary,
			ContentType: "application/json", Handle: func(c *Call) {
				c.Ctx.Response.Header.Set("Cache-Control", "public, max-age=300")
				c.rawJSON(200, body(s.contracts()))
			}}
	}
	return []Route{
		doc("getOpenAPI", "/openapi.json", "The OpenAPI 3.1 contract of every operation this node serves.",
			func(cc *contractCache) []byte { return cc.openapi }),
		doc("getOpenAPI30", "/openapi-3.0.json", "The same contract as OpenAPI 3.0.3, for client generators that do not read 3.1 yet.",
			func(cc *contractCache) []byte { return cc.openapi30 }),
		doc("getPostmanCollection", "/postman-collection.json", "A Postman v2.1 collection generated from the same route table.",
			func(cc *contractCache) []byte { return cc.postmn }),
	}
}
