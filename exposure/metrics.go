package exposure

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics count exposures as promptd_exposures_total{agent, env, version,
// arm}. At most MaxSeries label sets are created; past that, new ones are
// counted under version="other", so a fleet with many agents and versions
// cannot blow up the metrics endpoint. A nil *Metrics records nothing.
type Metrics struct {
	total *prometheus.CounterVec
	max   int

	mu     sync.Mutex
	series map[[4]string]prometheus.Counter
}

// NewMetrics creates and registers the counter (reg may be nil); max is
// PROMPTD_EXPOSURE_SERIES_MAX (zero means DefaultSeries).
func NewMetrics(reg prometheus.Registerer, max int) *Metrics {
	if max <= 0 {
		max = DefaultSeries
	}
	m := &Metrics{max: max, series: map[[4]string]prometheus.Counter{},
		total: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "promptd_exposures_total",
			Help: "Servings recorded (reported and the server's own), by agent, env, version and release arm (\"\" without a release); version=\"other\" past PROMPTD_EXPOSURE_SERIES_MAX series."},
			[]string{"agent", "env", "version", "arm"})}
	if reg != nil {
		reg.MustRegister(m.total)
	}
	return m
}

func (m *Metrics) add(sums map[Key]int64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, n := range sums {
		labels := [4]string{k.Agent, k.Env, strconv.Itoa(k.Version), k.Arm}
		c, ok := m.series[labels]
		if !ok {
			if len(m.series) >= m.max {
				labels[2] = "other"
			}
			if c, ok = m.series[labels]; !ok {
				c = m.total.WithLabelValues(labels[:]...)
				m.series[labels] = c
			}
		}
		c.Add(float64(n))
	}
}
