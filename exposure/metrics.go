package exposure

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics count exposures as promptd_exposures_total{agent, env, version,
// arm}. The cap is on the label set as a whole: at most max label sets are
// created, and past that every new one is counted under the one series
// whose four labels are all "other", so the counter never has more than
// max+1 series however many agents, envs and versions are reported. Only
// real label sets reach it: Record refuses agents, envs, versions and
// releases that do not exist. A nil *Metrics records nothing.
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
			Help: "Servings recorded (reported and the server's own), by agent, env, version and release arm (\"\" without a release); every label \"other\" past PROMPTD_EXPOSURE_SERIES_MAX series."},
			[]string{"agent", "env", "version", "arm"})}
	if reg != nil {
		reg.MustRegister(m.total)
	}
	return m
}

// overflow is the one series past the cap.
var overflow = [4]string{"other", "other", "other", "other"}

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
				labels = overflow
			}
			if c, ok = m.series[labels]; !ok {
				c = m.total.WithLabelValues(labels[:]...)
				m.series[labels] = c
			}
		}
		c.Add(float64(n))
	}
}
