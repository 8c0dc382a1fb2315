package node

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trustd/trustd/platform/cluster"
	api "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/traffic/admission"
	trafficapi "github.com/trustd/trustd/traffic/api"
	"github.com/trustd/trustd/traffic/lease"
	"github.com/trustd/trustd/traffic/ratecheck"
)

// newTraffic builds the traffic area's modules over the router (the
// rate-limit check, whose per-policy counters reg exports; concurrency
// leases; dependency admission), serves a policy's counters to the other
// members, and returns the area's routes.
func (n *Node) newTraffic(reg prometheus.Registerer) []api.Area {
	r := n.router
	rl := ratecheck.New(ratecheck.Config{Now: time.Now, Asker: r,
		Local: func(key string) bool { return r.Ring().OwnsLocally(cluster.Partition(key)) }})
	reg.MustRegister(rl.Collector())
	d := trafficapi.Deps{RateCheck: rl, Lease: lease.New(r, time.Now, n.log), Admission: admission.New(r, time.Now),
		Router: r, Peers: n.cluster, NodeID: n.cfg.NodeID, Ring: r}
	trafficapi.HandlePeers(d, n.store.Catalog)
	return trafficapi.Areas(d)
}
