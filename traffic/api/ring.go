package api

import (
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/go-json-experiment/json"
	"github.com/valyala/fasthttp"

	"github.com/trustd/trustd/platform/cluster"
	kernel "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/traffic/ratecheck"
)

// Client-side routing of the rate-limit check (traffic/client): a client
// that sends each check straight to the owner of its bucket spares the
// cluster the forwarded ask (a frame to the owner and back, on two nodes'
// CPUs). The cluster tells it two things and keeps the scope key, a
// workspace secret, to itself:
//
//   - GET /v1/rate-limit/ring: the placement of the partitions on the
//     members (epoch, members' public API URLs, the owner of each
//     partition), the same for every node at one epoch. It is encoded once
//     per ring epoch: the ring changes when membership does, rarely.
//   - the partition hint: a check sent with X-Trustd-Routing: 1 is
//     answered with the partition of its first policy's bucket key and
//     the ring epoch it was decided under. The client cannot compute the
//     partition itself (the bucket key is an HMAC under the scope key), so
//     it learns it from an answer and keeps it per request: the same
//     policies and scope values give the same key for as long as the
//     workspace's policies and scope key are unchanged.
//
// The hint costs a check without the header one header lookup; the answer
// is then byte for byte what it was before routing existed. A node whose
// partitions are not yet held (a ring change a moment ago) still appears
// as their owner: it forwards or answers 503 itself, and the client falls
// back to any node.

// The routing headers of the check.
const (
	// RoutingHeader asks a check's answer for the partition hint; its
	// value is 1.
	RoutingHeader = "X-Trustd-Routing"
	// PartitionHeader is the partition of the check's first matched
	// policy's bucket key, absent when no policy matched.
	PartitionHeader = "X-Trustd-Partition"
	// EpochHeader is the epoch of the ring the answering node routed the
	// check under.
	EpochHeader = "X-Trustd-Ring-Epoch"
)

// routingHeaderKey is RoutingHeader in the canonical form fasthttp keeps
// request header names in (it normalises them as it parses), so the
// lookup every check pays needs no normalising copy of the name.
var routingHeaderKey = []byte(RoutingHeader)

// wantsRoutingHint reports whether a check asked for its partition hint.
func wantsRoutingHint(h *fasthttp.RequestHeader) bool {
	v := h.PeekCanonical(routingHeaderKey)
	return len(v) == 1 && v[0] == '1'
}

// RingSource is the cluster's current ring (*cluster.Router).
type RingSource interface {
	Ring() *cluster.Ring
}

// RateLimitRing is the placement of rate-limit buckets on the cluster's
// members, for clients that route checks themselves.
type RateLimitRing struct {
	Epoch      uint64     `json:"epoch" required:"true" doc:"The ring's epoch: it grows whenever membership changes. A check answer's X-Trustd-Ring-Epoch differing from it means the ring has moved: fetch it again."`
	Partitions int        `json:"partitions" required:"true" doc:"Number of partitions (1024 for the life of a cluster)."`
	Nodes      []RingNode `json:"nodes" required:"true" doc:"The members that own partitions."`
	Owners     []int      `json:"owners" required:"true" doc:"For each partition, in order, the index in nodes of its owner. A check sent with X-Trustd-Routing: 1 is answered with X-Trustd-Partition, the partition of its first matched policy's bucket: send the same check to that partition's owner next time."`
}

// RingNode is one member of the ring.
type RingNode struct {
	ID  string `json:"id" required:"true"`
	URL string `json:"url" required:"true" doc:"The member's public API base (its advertised HTTP address); empty when it advertises none."`
}

// ringDoc is the encoded ring of one epoch.
type ringDoc struct {
	epoch uint64
	body  []byte
}

// ringAPI answers the ring, encoded once per epoch.
type ringAPI struct {
	check *checkAPI // authenticates as the check does
	src   RingSource
	doc   atomic.Pointer[ringDoc]
}

var ringErrors = []kernel.ErrorCode{kernel.ErrMissingSecret, kernel.ErrInvalidSecret, kernel.ErrRateLimited, rlUnavailable}

func (a *ringAPI) route() kernel.Route {
	return kernel.Route{Method: "GET", Path: "/rate-limit/ring", ID: "rateLimitRing", Tag: "Traffic control",
		Summary: "The cluster's placement of rate-limit buckets (partition → owner, epoch), for clients that send each check to its owner; checks sent with X-Trustd-Routing: 1 answer X-Trustd-Partition and X-Trustd-Ring-Epoch.",
		Auth:    []kernel.Auth{kernel.AuthSiteSecret}, Result: &RateLimitRing{},
		Errors: ringErrors, SpecErrors: true, Handle: a.ring}
}

func (a *ringAPI) ring(c *kernel.Call) {
	cat := c.Catalog()
	if cat == nil || cat.Index == 0 || a.src == nil {
		c.SpecFail(rlUnavailable)
		return
	}
	// Authenticated exactly as the check is (a site secret, bearer only:
	// a GET has no body), and counted on the same ingress budget.
	k := a.check.scratch.Get().(*rlScratch)
	k.in = rlInput{}
	cl, ok := k.authenticate(c, cat)
	a.check.scratch.Put(k)
	if !ok || !c.AdmitCredential(cl.AppID, cl.Workspace.ID) {
		return
	}
	r := a.src.Ring()
	if r == nil || len(r.Members) == 0 {
		c.SpecFail(rlUnavailable) // not in a ring yet: nothing to route by
		return
	}
	d := a.doc.Load()
	if d == nil || d.epoch != r.Epoch {
		d = &ringDoc{epoch: r.Epoch, body: encodeRing(r)}
		a.doc.Store(d)
	}
	c.Ctx.SetStatusCode(200)
	c.Ctx.SetContentType("application/json")
	c.Ctx.SetBody(d.body)
}

// encodeRing is the ring's answer. Owners are indexes into the ring's
// members, which every node lists in the same order at one epoch.
func encodeRing(r *cluster.Ring) []byte {
	doc := RateLimitRing{Epoch: r.Epoch, Partitions: cluster.Partitions, Owners: make([]int, cluster.Partitions)}
	for _, m := range r.Members {
		doc.Nodes = append(doc.Nodes, RingNode{ID: m.ID, URL: apiURL(m.APIAddr)})
	}
	for p := range doc.Owners {
		doc.Owners[p] = r.Owner(p)
	}
	b, err := json.Marshal(&doc)
	if err != nil { // plain ints and strings: cannot fail
		return []byte(`{}`)
	}
	return b
}

// apiURL is a member's public API base from its advertised address (a
// host:port; trustd serves plain HTTP, TLS ends in front of it).
func apiURL(addr string) string {
	if addr == "" || strings.Contains(addr, "://") {
		return addr
	}
	return "http://" + addr
}

// hint writes the partition hint of a decided check.
func (a *checkAPI) hint(c *kernel.Call, res *ratecheck.Result) {
	r := a.ring.Ring()
	if r == nil {
		return
	}
	var buf [20]byte
	h := &c.Ctx.Response.Header
	if key := res.BucketKey(); key != "" {
		h.SetBytesV(PartitionHeader, strconv.AppendInt(buf[:0], int64(cluster.Partition(key)), 10))
	}
	h.SetBytesV(EpochHeader, strconv.AppendUint(buf[:0], r.Epoch, 10))
}
