package node

import (
	"crypto/x509"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trustd/trustd/platform/catalog"
)

// opsCollector exports what the alert rules of deploy/prometheus need and
// nothing else exported: ring membership, the webhook backlog, the node
// certificate's expiry and the Raft disk. Each is read on the scrape from
// state the node already holds (the catalog, its TLS configuration, one
// statfs), so nothing runs between scrapes.
type opsCollector struct {
	n                   *Node
	ringMembers, inRing *prometheus.Desc
	pending, oldest     *prometheus.Desc
	certNotAfter        *prometheus.Desc
	diskFree, diskSize  *prometheus.Desc
}

func (n *Node) opsCollector() prometheus.Collector {
	return &opsCollector{n: n,
		ringMembers: prometheus.NewDesc("trustd_ring_members", "Nodes in the ring this node serves (ready, unfenced members of the replicated membership).", nil, nil),
		inRing:      prometheus.NewDesc("trustd_node_in_ring", "1 when this node is a member of the ring it serves (owns partitions), else 0 (joining, draining, fenced).", nil, nil),
		pending: prometheus.NewDesc("trustd_webhook_outbox_pending_deliveries",
			"Webhook deliveries not yet delivered nor given up, over every workspace's outbox (replicated: every node reports the same).", nil, nil),
		oldest: prometheus.NewDesc("trustd_webhook_outbox_oldest_pending_seconds",
			"Age of the oldest event with a pending delivery (0 when none).", nil, nil),
		certNotAfter: prometheus.NewDesc("trustd_tls_cert_not_after_timestamp_seconds",
			"Expiry (Unix time) of this node's certificate for Raft and peer traffic.", nil, nil),
		diskFree: prometheus.NewDesc("trustd_raft_disk_free_bytes", "Bytes available to the node on the file system of its Raft data directory.", nil, nil),
		diskSize: prometheus.NewDesc("trustd_raft_disk_size_bytes", "Size of the file system of the Raft data directory.", nil, nil),
	}
}

func (c *opsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.ringMembers, c.inRing, c.pending, c.oldest, c.certNotAfter, c.diskFree, c.diskSize} {
		ch <- d
	}
}

func (c *opsCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	cat := c.n.store.Catalog()
	in := 0.0
	for _, m := range cat.Ring.Members {
		if m.ID == c.n.cfg.NodeID {
			in = 1
		}
	}
	gauge(c.ringMembers, float64(len(cat.Ring.Members)))
	gauge(c.inRing, in)
	pending, oldest := webhookBacklog(cat, time.Now())
	gauge(c.pending, float64(pending))
	gauge(c.oldest, oldest.Seconds())
	if t, ok := certNotAfter(c.n); ok {
		gauge(c.certNotAfter, float64(t.Unix()))
	}
	if free, size, ok := diskSpace(filepath.Join(c.n.cfg.DataDir, "raft")); ok {
		gauge(c.diskFree, float64(free))
		gauge(c.diskSize, float64(size))
	}
}

// webhookBacklog counts pending deliveries and the age of the oldest event
// holding one.
func webhookBacklog(cat *catalog.Catalog, now time.Time) (pending int, oldest time.Duration) {
	for _, o := range cat.WebhookOutboxes {
		for _, e := range o.Events {
			waiting := 0
			for _, d := range e.Deliveries {
				if d.Status == catalog.DeliveryPending {
					waiting++
				}
			}
			if waiting > 0 {
				pending += waiting
				oldest = max(oldest, now.Sub(e.CreatedAt))
			}
		}
	}
	return pending, oldest
}

// certNotAfter is the expiry of the node's internal certificate.
func certNotAfter(n *Node) (time.Time, bool) {
	if n.cfg.TLS == nil {
		return time.Time{}, false
	}
	certs := n.cfg.TLS.Server().Certificates
	if len(certs) == 0 || len(certs[0].Certificate) == 0 {
		return time.Time{}, false
	}
	leaf := certs[0].Leaf
	if leaf == nil {
		var err error
		if leaf, err = x509.ParseCertificate(certs[0].Certificate[0]); err != nil {
			return time.Time{}, false
		}
	}
	return leaf.NotAfter, true
}
