package board

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the board collectors, by board (at most MaxBoards of them).
type Metrics struct {
	claims    *prometheus.CounterVec
	conflicts *prometheus.CounterVec
	reclaims  *prometheus.CounterVec
	wait      *prometheus.HistogramVec
}

// NewMetrics registers the board collectors with reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		claims: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "promptd_board_claims_total",
			Help: "Records claimed, by board."}, []string{"board"}),
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "promptd_board_conflicts_total",
			Help: "Record writes refused by a condition, by board and kind (revision_conflict, stale_fence, claim_expired, claimed)."},
			[]string{"board", "kind"}),
		reclaims: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "promptd_board_reclaims_total",
			Help: "Expired claims taken back (by the sweeper or a claim), by board."}, []string{"board"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "promptd_board_claim_wait_seconds",
			Help: "Time a claim took, waiting included, by board.", Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10)},
			[]string{"board"}),
	}
	if reg != nil {
		reg.MustRegister(m.claims, m.conflicts, m.reclaims, m.wait)
	}
	return m
}

func (m *Metrics) claimed(board string, took time.Duration) {
	if m != nil {
		m.claims.WithLabelValues(board).Inc()
		m.wait.WithLabelValues(board).Observe(took.Seconds())
	}
}

func (m *Metrics) conflict(board, kind string) {
	if m != nil {
		m.conflicts.WithLabelValues(board, kind).Inc()
	}
}

func (m *Metrics) reclaimed(board string, n int) {
	if m != nil && n > 0 {
		m.reclaims.WithLabelValues(board).Add(float64(n))
	}
}
