package events

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	emitted  prometheus.Counter
	attempts *prometheus.CounterVec
	disabled prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		emitted: prometheus.NewCounter(prometheus.CounterOpts{Name: "trustd_webhook_events_emitted_total",
			Help: "Events stored in a webhook outbox through this node."}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "trustd_webhook_attempts_total",
			Help: "Webhook delivery attempts this node made as leader, by outcome (delivered, retrying, failed)."}, []string{"outcome"}),
		disabled: prometheus.NewCounter(prometheus.CounterOpts{Name: "trustd_webhook_endpoints_disabled_total",
			Help: "Webhook endpoints this node disabled after sustained failure (an alert: see the workspace's webhook alerts)."}),
	}
	if reg != nil {
		reg.MustRegister(m.emitted, m.attempts, m.disabled)
	}
	return m
}
