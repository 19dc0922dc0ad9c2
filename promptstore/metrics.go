package promptstore

import "github.com/prometheus/client_golang/prometheus"

// Metrics of the prompt store; a nil *Metrics records nothing.
type Metrics struct {
	conflicts *prometheus.CounterVec
	cacheOps  *prometheus.CounterVec
	degradedW *prometheus.CounterVec
	events    *prometheus.CounterVec
	resolve   prometheus.Histogram
	// The runtime path's cache counters, looked up once: WithLabelValues
	// hashes its labels on every call.
	pointerHit, pointerMiss, snapshotHit, snapshotMiss prometheus.Counter
}

// NewMetrics creates and registers the collectors (reg may be nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "promptd_revision_conflicts_total",
			Help: "Writes rejected by a version or revision condition, by kind."}, []string{"kind"}),
		cacheOps: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "promptd_cache_requests_total",
			Help: "In-process cache lookups by cache and result (hit, miss)."}, []string{"cache", "result"}),
		degradedW: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "promptd_degraded_operations_total",
			Help: "Operations that went ahead without a store (the store that was down)."}, []string{"store"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "promptd_cache_refreshes_total",
			Help: "Pointer cache refreshes by source (event, reconciler, write)."}, []string{"source"}),
		resolve: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "promptd_resolve_seconds",
			Help: "Time to resolve a prompt, in process.", Buckets: prometheus.ExponentialBuckets(0.000005, 4, 10)}),
	}
	if reg != nil {
		reg.MustRegister(m.conflicts, m.cacheOps, m.degradedW, m.events, m.resolve)
	}
	m.pointerHit, m.pointerMiss = m.cacheOps.WithLabelValues("pointer", "hit"), m.cacheOps.WithLabelValues("pointer", "miss")
	m.snapshotHit, m.snapshotMiss = m.cacheOps.WithLabelValues("snapshot", "hit"), m.cacheOps.WithLabelValues("snapshot", "miss")
	return m
}

func (m *Metrics) conflict(kind string) {
	if m != nil {
		m.conflicts.WithLabelValues(kind).Inc()
	}
}

// Conflict counts a rejected write of kind (for other domain packages).
func (m *Metrics) Conflict(kind string) { m.conflict(kind) }

func (m *Metrics) cache(name, result string) {
	if m == nil {
		return
	}
	var c prometheus.Counter
	switch {
	case name == "pointer" && result == "hit":
		c = m.pointerHit
	case name == "pointer" && result == "miss":
		c = m.pointerMiss
	case name == "snapshot" && result == "hit":
		c = m.snapshotHit
	case name == "snapshot" && result == "miss":
		c = m.snapshotMiss
	default:
		c = m.cacheOps.WithLabelValues(name, result)
	}
	c.Inc()
}

func (m *Metrics) degraded(store string) {
	if m != nil {
		m.degradedW.WithLabelValues(store).Inc()
	}
}

func (m *Metrics) refreshed(source string) {
	if m != nil {
		m.events.WithLabelValues(source).Inc()
	}
}

func (m *Metrics) resolved(seconds float64) {
	if m != nil {
		m.resolve.Observe(seconds)
	}
}
