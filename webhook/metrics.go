package webhook

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the deliveries' collectors. A nil *Metrics records nothing.
type Metrics struct {
	outcomes *prometheus.CounterVec
	latency  prometheus.Histogram
	oldest   prometheus.Gauge
}

// NewMetrics creates the collectors and registers them with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promptd_webhook_deliveries_total",
			Help: "Delivery attempts by outcome: delivered, retry (will be tried again), failed (no retry left, or 410), queue_full."},
			[]string{"outcome"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "promptd_webhook_delivery_seconds", Help: "Time of one delivery attempt, from dial to the answer's end.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12)}),
		oldest: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "promptd_webhook_oldest_pending_seconds", Help: "Age of the oldest pending delivery (0 when none)."}),
	}
	if reg != nil {
		reg.MustRegister(m.outcomes, m.latency, m.oldest)
	}
	return m
}

func (m *Metrics) outcome(o string, n int) {
	if m != nil && n > 0 {
		m.outcomes.WithLabelValues(o).Add(float64(n))
	}
}

func (m *Metrics) observe(seconds float64) {
	if m != nil {
		m.latency.Observe(seconds)
	}
}

func (m *Metrics) setOldest(seconds float64) {
	if m != nil {
		m.oldest.Set(seconds)
	}
}
