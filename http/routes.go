package http

import (
	"github.com/trustd/trustd/identity/documents"
	"github.com/trustd/trustd/risk/trust"
)

// modules holds the state of the API modules, each built in its own file.
type modules struct {
	contract contractCache
	rl       *rateLimitModule
	ap       *apiProtectionModule
	hv       *hvModule
	docs     *documents.Screener
	trust    *trust.Module
}

func newModules(s *Server) modules {
	return modules{rl: newRateLimitModule(s), ap: newAPIProtectionModule(s), hv: newHVModule(), docs: newDocumentScreener(), trust: s.newTrustModule()}
}

// routes assembles the route table from every module. Adding a module is
// one line here and one file beside this one.
func (s *Server) routes() []Route {
	var rs []Route
	rs = append(rs, s.platformRoutes()...)
	rs = append(rs, s.adminRoutes()...)
	rs = append(rs, s.signingKeyRoutes()...)
	rs = append(rs, s.widgetRoutes()...)
	rs = append(rs, s.clusterRoutes()...)
	rs = append(rs, s.rateLimitRoutes()...)
	rs = append(rs, s.apiProtectionRoutes()...)
	rs = append(rs, s.hvRoutes()...)
	rs = append(rs, s.trafficRoutes()...)
	rs = append(rs, s.documentRoutes()...)
	rs = append(rs, s.agentRoutes()...)
	rs = append(rs, s.trustRoutes()...)
	return rs
}
