package http

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the per-operation request counts and latency histograms.
// Every series is resolved when the table is built, so observing a request
// is a few atomic adds and no map lookups.
type metrics struct {
	latency  []prometheus.Observer
	byStatus []map[int]prometheus.Counter
	requests *prometheus.CounterVec
	unrouted *prometheus.CounterVec
	// classes[route][class] counts answers by class (classOK … classServer)
	// for the cluster-wide summary (metrics_summary.go).
	classes [][numClasses]atomic.Uint64
	// outcomes[route][outcome] counts the decisions answers carried.
	outcomes [][numOutcomes]atomic.Uint64
}

func newMetrics(reg prometheus.Registerer, routes []*Route) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trustd_http_requests_total", Help: "Requests by operation and status.",
		}, []string{"operation", "status"}),
		unrouted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trustd_http_unrouted_total", Help: "Requests that matched no operation, by status.",
		}, []string{"status"}),
	}
	lat := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "trustd_http_request_duration_seconds",
		Help:    "Server-side latency by operation.",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
	}, []string{"operation"})
	if reg != nil {
		reg.MustRegister(m.requests, m.unrouted, lat)
	}
	m.classes = make([][numClasses]atomic.Uint64, len(routes))
	m.outcomes = make([][numOutcomes]atomic.Uint64, len(routes))
	m.latency = make([]prometheus.Observer, len(routes))
	m.byStatus = make([]map[int]prometheus.Counter, len(routes))
	for i, r := range routes {
		m.latency[i] = lat.WithLabelValues(r.ID)
		m.byStatus[i] = map[int]prometheus.Counter{}
		for _, st := range []int{200, 201, 204, 400, 401, 403, 404, 405, 409, 413, 415, 429, 500, 503} {
			m.byStatus[i][st] = m.requests.WithLabelValues(r.ID, strconv.Itoa(st))
		}
	}
	return m
}

func (m *metrics) observe(r *Route, status int, start, end time.Time) {
	m.latency[r.idx].Observe(end.Sub(start).Seconds())
	m.classes[r.idx][classOf(status)].Add(1)
	if c, ok := m.byStatus[r.idx][status]; ok {
		c.Inc()
		return
	}
	m.requests.WithLabelValues(r.ID, strconv.Itoa(status)).Inc()
}

func (m *metrics) unroutedReq(status int) { m.unrouted.WithLabelValues(strconv.Itoa(status)).Inc() }
