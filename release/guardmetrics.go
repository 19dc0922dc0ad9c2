package release

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/promptd/promptd/release/guard"
)

// GuardMetrics are the guard evaluator's collectors. Gauges are labelled
// by agent and env (one active release each), so their number is bounded
// by the envs, not by the releases.
type GuardMetrics struct {
	evaluations prometheus.Counter
	trips       *prometheus.CounterVec
	samples     *prometheus.GaugeVec
	rate        *prometheus.GaugeVec
	lower       *prometheus.GaugeVec
	state       *prometheus.GaugeVec
}

// NewGuardMetrics registers the guard collectors with reg (nil:
// unregistered).
func NewGuardMetrics(reg prometheus.Registerer) *GuardMetrics {
	m := &GuardMetrics{
		evaluations: prometheus.NewCounter(prometheus.CounterOpts{Name: "promptd_release_guard_evaluations_total",
			Help: "Guards evaluated by the guard job."}),
		trips: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "promptd_release_guard_trips_total",
			Help: "Guards tripped, by agent, env and action (pause, rollback)."}, []string{"agent", "env", "action"}),
		samples: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "promptd_release_guard_samples",
			Help: "Bucket outcomes the guard of the env's release counts, by arm."}, []string{"agent", "env", "arm"}),
		rate: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "promptd_release_guard_failure_rate_percent",
			Help: "Failure rate of the arm's bucket outcomes since the guard started, in percent."}, []string{"agent", "env", "arm"}),
		lower: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "promptd_release_guard_degradation_lower_bound",
			Help: "Lower bound of the always-valid confidence sequence of the degradation (metric unit: points or score)."}, []string{"agent", "env"}),
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "promptd_release_guard_state",
			Help: "1 for the state the guard of the env's release is in (collecting, watching, tripped)."}, []string{"agent", "env", "state"}),
	}
	if reg != nil {
		reg.MustRegister(m.evaluations, m.trips, m.samples, m.rate, m.lower, m.state)
	}
	return m
}

func (m *GuardMetrics) evaluated(n int) {
	if m != nil {
		m.evaluations.Add(float64(n))
	}
}

func (m *GuardMetrics) observe(rel *Release, d guard.Decision) {
	if m == nil {
		return
	}
	for arm, st := range map[string]guard.ArmStats{guard.Baseline: d.Stats.Baseline, guard.Candidate: d.Stats.Candidate} {
		n := st.N
		if rel.Guard != nil && rel.Guard.Metric == guard.Score {
			n = st.Scored
		}
		m.samples.WithLabelValues(rel.Agent, rel.Env, arm).Set(float64(n))
		m.rate.WithLabelValues(rel.Agent, rel.Env, arm).Set(st.Rate)
	}
	if d.Stats.Difference != nil {
		m.lower.WithLabelValues(rel.Agent, rel.Env).Set(d.Stats.Difference.Lower)
	}
	m.setState(rel, d.State)
}

func (m *GuardMetrics) setState(rel *Release, s guard.State) {
	for _, st := range []guard.State{guard.Collecting, guard.Watching, guard.Tripped} {
		v := 0.0
		if st == s {
			v = 1
		}
		m.state.WithLabelValues(rel.Agent, rel.Env, string(st)).Set(v)
	}
}

func (m *GuardMetrics) tripped(rel *Release, a Action) {
	if m != nil {
		m.trips.WithLabelValues(rel.Agent, rel.Env, string(a)).Inc()
		m.setState(rel, guard.Tripped)
	}
}
