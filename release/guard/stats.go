package guard

import (
	"math"

	"github.com/promptd/promptd/wire"
)

// Arm names.
const (
	Baseline  = "baseline"
	Candidate = "candidate"
)

// Row is the aggregate of one arm's bucket outcomes in one percent period
// as reported by one token: what the release's grouped query returns.
type Row struct {
	Period   int
	Arm      string
	Token    string
	N        int64   // outcomes
	Failures int64   // of them with success false
	Scored   int64   // of them with a score
	ScoreSum float64 // sum of the scores
	ScoreSq  float64 // sum of the squared scores
}

// Agg is a sum of rows.
type Agg struct {
	N, Failures, Scored int64
	ScoreSum, ScoreSq   float64
}

// Add adds r to a.
func (a *Agg) Add(r Row) {
	a.N += r.N
	a.Failures += r.Failures
	a.Scored += r.Scored
	a.ScoreSum += r.ScoreSum
	a.ScoreSq += r.ScoreSq
}

// rate is the failure share and the smoothed variance of one outcome:
// half a failure and half a success are added, so an arm without failures
// yet still has some variance.
func (a Agg) rate() (p, v float64) {
	if a.N == 0 {
		return 0, 0.25
	}
	p = float64(a.Failures) / float64(a.N)
	ps := (float64(a.Failures) + 0.5) / (float64(a.N) + 1)
	return p, ps * (1 - ps)
}

// minScoreVar floors a score variance estimated from few outcomes.
const minScoreVar = 1e-4

// score is the mean score and the variance of one score.
func (a Agg) score() (m, v float64) {
	if a.Scored == 0 {
		return 0, 0.25
	}
	n := float64(a.Scored)
	m = a.ScoreSum / n
	if a.Scored > 1 {
		v = (a.ScoreSq - a.ScoreSum*a.ScoreSum/n) / (n - 1)
	}
	return m, math.Max(v, minScoreVar)
}

// samples is the arm's sample count for metric m.
func (a Agg) samples(m Metric) int64 {
	if m == Score {
		return a.Scored
	}
	return a.N
}

// ArmStats are one arm's figures as the API shows them: Rate and Interval
// (the always-valid confidence sequence of the failure rate) in percent,
// ScoreMean and ScoreInterval 0..1 (null without scores). Both intervals
// are null until both arms of the comparison have the guard's minimum
// samples of its metric: a sequence computed from a handful of outcomes
// (one score per arm gives [0.954, 1]) claims a precision it has not.
type ArmStats = wire.ArmStats

// armStats describes a at level alpha, with its intervals when
// intervals is set (both arms have the minimum samples).
func armStats(a Agg, alpha float64, intervals bool) ArmStats {
	p, v := a.rate()
	s := ArmStats{N: a.N, Failures: a.Failures, Rate: round(100 * p), Scored: a.Scored}
	if intervals && a.N > 0 {
		r := radius(v/float64(a.N), 0.05*0.05, alpha)
		s.Interval = &[2]float64{round(100 * math.Max(p-r, 0)), round(100 * math.Min(p+r, 1))}
	}
	if a.Scored > 0 {
		m, v := a.score()
		mean := round(m)
		s.ScoreMean = &mean
		if intervals {
			r := radius(v/float64(a.Scored), 0.05*0.05, alpha)
			s.ScoreInterval = &[2]float64{round(math.Max(m-r, 0)), round(math.Min(m+r, 1))}
		}
	}
	return s
}

// sampled reports whether both arms have c's minimum samples of its
// metric, the condition for showing intervals.
func sampled(c Config, arms [2]Agg) bool {
	return arms[0].samples(c.Metric) >= int64(c.MinSamples) && arms[1].samples(c.Metric) >= int64(c.MinSamples)
}

// round keeps 4 decimals: figures for people, not for further arithmetic.
func round(x float64) float64 { return math.Round(x*1e4) / 1e4 }
