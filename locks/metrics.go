package locks

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the lock manager's Prometheus collectors. A nil *Metrics
// records nothing.
type Metrics struct {
	attempts        *prometheus.CounterVec
	failures        *prometheus.CounterVec
	wait            *prometheus.HistogramVec
	hold            *prometheus.HistogramVec
	renewals        *prometheus.CounterVec
	renewalFailures *prometheus.CounterVec
	lost            *prometheus.CounterVec
	tokenLosts      *prometheus.CounterVec
	waiters         prometheus.Gauge
}

// NewMetrics creates the collectors and registers them with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promptd_lock_acquire_attempts_total", Help: "Lock acquire attempts sent to the backend.",
		}, []string{"kind"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promptd_lock_acquire_failures_total", Help: "Lock acquires that did not obtain the lease, by reason (held, unavailable, lost, too_many_waiters).",
		}, []string{"kind", "reason"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "promptd_lock_wait_seconds", Help: "Time from the first acquire attempt to the grant or give-up.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}, []string{"kind"}),
		hold: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "promptd_lock_hold_seconds", Help: "How long leases were held, until release or loss.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}, []string{"kind"}),
		renewals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promptd_lock_renewals_total", Help: "Successful renewals: keepalive, and by token (leases held by HTTP clients).",
		}, []string{"kind"}),
		renewalFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promptd_lock_renewal_failures_total", Help: "Renewals that failed: keepalive renewals (backend error or lease gone), and renewals by token the backend could not answer.",
		}, []string{"kind"}),
		lost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promptd_lock_leases_lost_total", Help: "Leases promptd keeps alive (jobs, internal locks) lost while held, by reason (taken: a renewal found the key gone or taken; expired: no renewal succeeded in time). Leases held by HTTP clients are never counted here.",
		}, []string{"kind", "reason"}),
		tokenLosts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promptd_lock_token_not_held_total", Help: "Renewals and releases by token (leases held by HTTP clients) that found the token no longer holding the lease, by op (renew, release): it ran to its TTL or was taken over. The client's news, not a loss of promptd's own leases.",
		}, []string{"kind", "op"}),
		waiters: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "promptd_lock_waiters", Help: "Acquires of this process waiting for a held key (limit PROMPTD_LEASE_MAX_WAITERS).",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.attempts, m.failures, m.wait, m.hold, m.renewals, m.renewalFailures, m.lost, m.tokenLosts, m.waiters)
	}
	return m
}

// kindOf extracts <kind> from P:lock:<kind>:{...} so labels stay bounded.
func kindOf(key string) string {
	i := strings.Index(key, ":lock:")
	if i < 0 {
		return "other"
	}
	rest := key[i+len(":lock:"):]
	if j := strings.IndexByte(rest, ':'); j > 0 {
		// Kinds are the constants of the packages that take locks (Keys.Key
		// refuses anything else), so the label set stays small.
		if k := rest[:j]; len(k) <= 16 && strings.Trim(k, "abcdefghijklmnopqrstuvwxyz") == "" {
			return k
		}
	}
	return "other"
}

func (m *Metrics) attempt(key string) {
	if m != nil {
		m.attempts.WithLabelValues(kindOf(key)).Inc()
	}
}

func (m *Metrics) failure(key, reason string) {
	if m != nil {
		m.failures.WithLabelValues(kindOf(key), reason).Inc()
	}
}

func (m *Metrics) waited(key string, seconds float64) {
	if m != nil {
		m.wait.WithLabelValues(kindOf(key)).Observe(seconds)
	}
}

func (m *Metrics) held(key string, seconds float64) {
	if m != nil {
		m.hold.WithLabelValues(kindOf(key)).Observe(seconds)
	}
}

func (m *Metrics) renewed(key string, ok bool) {
	if m == nil {
		return
	}
	if ok {
		m.renewals.WithLabelValues(kindOf(key)).Inc()
	} else {
		m.renewalFailures.WithLabelValues(kindOf(key)).Inc()
	}
}

func (m *Metrics) lostLease(key, reason string) {
	if m != nil {
		m.lost.WithLabelValues(kindOf(key), reason).Inc()
	}
}

func (m *Metrics) tokenLost(key, op string) {
	if m != nil {
		m.tokenLosts.WithLabelValues(kindOf(key), op).Inc()
	}
}

func (m *Metrics) addWaiters(d float64) {
	if m != nil {
		m.waiters.Add(d)
	}
}
