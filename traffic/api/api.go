// Package api is the traffic area's HTTP adapter: the routes, contract
// bodies, admin validation and error vocabularies of the rate-limit check
// and its policies, concurrency leases, dependency admission and their
// admin collections. It parses, authenticates through the transport's
// Call, calls the traffic modules and encodes; it decides nothing (the
// decisions are traffic/…'s) and constructs no module (node/ does).
package api

import (
	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/cluster/summary"
	"github.com/trustd/trustd/platform/errcode"
	kernel "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/traffic/admission"
	"github.com/trustd/trustd/traffic/lease"
	"github.com/trustd/trustd/traffic/ratecheck"
)

// Asker reaches per-key state wherever its owner is (the cluster router):
// GET of one dependency reads its breaker's live state.
type Asker interface {
	Ask(key string, op actors.Op) error
}

// Deps are the modules the traffic routes call, built by node/.
type Deps struct {
	RateCheck *ratecheck.Module
	Lease     *lease.Module
	Admission *admission.Module
	Router    Asker
	// Peers are the cluster's members, for a policy's counters summed
	// over the cluster; nil on a node outside a cluster (the sum is then
	// this node's).
	Peers summary.Peers
	// NodeID names this node in a policy's counters.
	NodeID string
	// Ring is the cluster's current ring, for client-side routing of the
	// check (ring.go); nil answers no ring and no partition hints.
	Ring RingSource
}

// The names of the traffic areas, which place them in the contract
// documents: the rate-limit check with its policies, and the rest of
// traffic control (leases, admissions and their admin collections).
const (
	AreaRateLimit = "traffic/ratelimit"
	AreaControl   = "traffic"
)

// Areas are the traffic area's operations, for the transport's route
// table. The error codes of leases and admissions are listed in the
// contract's ApiError schema through the area; the rate-limit check's are
// the spec's own {success,error} codes, documented on its routes.
func Areas(d Deps) []kernel.Area {
	rl := newCheckAPI(d.RateCheck, d.Ring)
	st := statsAPI{m: d.RateCheck, node: d.NodeID, peers: d.Peers}
	ring := &ringAPI{check: rl, src: d.Ring}
	return []kernel.Area{
		{Name: AreaRateLimit, Routes: append(rateLimitRoutes(rl, st), ring.route())},
		{Name: AreaControl, Routes: controlRoutes(d), Errors: append(append([]*errcode.Code(nil), lease.Errors...), admission.Errors...)},
	}
}

// controlRoutes are leases, admissions and their admin collections, in
// the contract's order.
func controlRoutes(d Deps) []kernel.Route {
	var rs []kernel.Route
	rs = append(rs, leaseAPI{d.Lease}.routes()...)
	rs = append(rs, admissionAPI{d.Admission}.routes()...)
	rs = append(rs, adminAPI{lease: d.Lease, router: d.Router}.routes()...)
	return rs
}
