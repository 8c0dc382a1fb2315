package http

import (
	"github.com/trustd/trustd/platform/errcode"
)

// modules holds the product modules the route files still inside platform/http/
// call, one per line. Areas with their own adapter (Config.Areas) bring
// their modules, built by node/.
type modules struct {
	contract contractCache
}

func newModules(s *Server) modules {
	return modules{}
}

// routes assembles the route table: the kernel's own operations, the
// route files still inside platform/http/, and the areas node/ hands in.
func (s *Server) routes() []Route {
	var rs []Route
	rs = append(rs, s.areaRoutes("node/about")...)
	rs = append(rs, s.contractRoutes()...)
	rs = append(rs, s.areaRoutes("catalog/tenancy")...)
	rs = append(rs, s.areaRoutes("catalog/keys")...)
	rs = append(rs, s.areaRoutes("verify/widget")...)
	rs = append(rs, s.areaRoutes("node/cluster")...)
	rs = append(rs, s.areaRoutes("node/snapshots")...)
	rs = append(rs, s.areaRoutes("traffic/ratelimit")...)
	rs = append(rs, s.areaRoutes("risk/apiprotection")...)
	rs = append(rs, s.areaRoutes("verify")...)
	rs = append(rs, s.areaRoutes("traffic")...)
	rs = append(rs, s.areaRoutes("identity/documents")...)
	rs = append(rs, s.areaRoutes("agents")...)
	rs = append(rs, s.areaRoutes("risk/account")...)
	rs = append(rs, s.areaRoutes("events")...)
	rs = append(rs, s.areaRoutes("risk/passwords")...)
	rs = append(rs, s.areaRoutes("risk/trust")...)
	rs = append(rs, s.areaRoutes("risk/messaging")...)
	rs = append(rs, s.areaRoutes("branding")...)
	rs = append(rs, s.areaRoutes("console")...)
	rs = append(rs, s.areaRoutes("risk/passwords/status")...)
	rs = append(rs, s.areaRoutes("identity/sessions")...)
	rs = append(rs, s.areaRoutes("journeys")...)
	for _, a := range s.cfg.Areas {
		if !placed[a.Name] {
			rs = append(rs, a.Routes...)
		}
	}
	return rs
}

// placed names the areas routes and contractErrors put where their route
// files used to be, so that the contract documents (the order of the
// ApiError codes, the Postman folders) stay byte for byte what they were
// while the areas leave platform/http/. An area not named here follows the rest in
// the order node/ gives. When no route file is left in platform/http/, the list
// goes: the order is then node/'s alone.
var placed = map[string]bool{
	"risk/apiprotection": true, "risk/account": true, "risk/passwords": true, "risk/trust": true,
	"risk/messaging": true, "risk/passwords/status": true, "identity/documents": true, "identity/sessions": true, "journeys": true,
	"traffic/ratelimit": true, "traffic": true,
	"verify/widget": true, "verify": true,
	"agents": true, "events": true, "branding": true,
	"node/about": true, "console": true, "catalog/tenancy": true, "catalog/keys": true, "node/cluster": true, "node/snapshots": true,
}

// areaRoutes are the routes of the area called name, if node/ gave one.
func (s *Server) areaRoutes(name string) []Route {
	for _, a := range s.cfg.Areas {
		if a.Name == name {
			return a.Routes
		}
	}
	return nil
}

// areaErrors are the error vocabularies of the area called name.
func (s *Server) areaErrors(name string) []*errcode.Code {
	for _, a := range s.cfg.Areas {
		if a.Name == name {
			return a.Errors
		}
	}
	return nil
}
