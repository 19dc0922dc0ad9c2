package guard

import (
	"fmt"
	"math"

	"github.com/promptd/promptd/wire"
)

// State is a guard's state as the API shows it.
type State string

// States: collecting until both arms have MinSamples, then watching until
// it trips.
const (
	Collecting State = "collecting"
	Watching   State = "watching"
	Tripped    State = "tripped"
)

// Tally sums rows per arm, per percent period and per token. The zero
// value is empty and ready.
type Tally struct {
	arms    [2]Agg
	periods map[int][2]Agg
	tokens  map[string][2]Agg
}

func armIndex(arm string) (int, bool) {
	switch arm {
	case Baseline:
		return 0, true
	case Candidate:
		return 1, true
	}
	return 0, false
}

// Add counts r; a row of another arm is ignored.
func (t *Tally) Add(r Row) {
	i, ok := armIndex(r.Arm)
	if !ok {
		return
	}
	if t.periods == nil {
		t.periods, t.tokens = map[int][2]Agg{}, map[string][2]Agg{}
	}
	t.arms[i].Add(r)
	p := t.periods[r.Period]
	p[i].Add(r)
	t.periods[r.Period] = p
	if r.Token != "" {
		k := t.tokens[r.Token]
		k[i].Add(r)
		t.tokens[r.Token] = k
	}
}

// Stats are a release's figures as GET /v1/releases/{id} shows them (the
// wire shape: the server and the Go client share it).
type Stats = wire.ReleaseStats

// TokenArms are the arms' figures of the outcomes one token reported.
type TokenArms = wire.TokenArms

// Decision is what a guard concludes from a tally.
type Decision struct {
	State  State
	Reason string // why it tripped; empty otherwise
	Stats  Stats
}

// Decide applies c to the tally: collecting while an arm has fewer than
// MinSamples samples of the metric, tripped when the confidence
// sequence's lower bound on the degradation exceeds MaxDegradation,
// watching otherwise.
func (t *Tally) Decide(c Config) Decision {
	alpha := 1 - c.Confidence
	shown := sampled(c, t.arms)
	st := Stats{Baseline: armStats(t.arms[0], alpha, shown), Candidate: armStats(t.arms[1], alpha, shown), ByToken: map[string]TokenArms{}}
	for k, a := range t.tokens {
		tok := sampled(c, a)
		st.ByToken[k] = TokenArms{Baseline: armStats(a[0], alpha, tok), Candidate: armStats(a[1], alpha, tok)}
	}
	d, v, ok := difference(c, t.periods)
	lower := math.Inf(-1)
	if ok && shown {
		r := radius(v, c.tau()*c.tau(), alpha)
		lower = d - r
		unit := 1.0
		if c.Metric == FailureRate {
			unit = 100
		}
		// Both metrics' differences lie in [-1, 1]: the interval shown is
		// the sequence's intersected with that range (still covering; a
		// few samples otherwise show a rate worse by "-230 points").
		// The decision reads the unclipped bound; it is the same above 0.
		st.Difference = &Difference{Estimate: round(unit * d), Lower: round(unit * math.Max(lower, -1)),
			Upper: round(unit * math.Min(d+r, 1))}
	}
	out := Decision{State: Watching, Stats: st}
	mb, mc := t.arms[0].samples(c.Metric), t.arms[1].samples(c.Metric)
	switch {
	case mb < int64(c.MinSamples) || mc < int64(c.MinSamples):
		out.State = Collecting
	case ok && lower > c.threshold():
		out.State = Tripped
		out.Reason = reason(c, st.Difference)
	}
	return out
}

func reason(c Config, d *Difference) string {
	if c.Metric == Score {
		return fmt.Sprintf("the candidate's score is lower by at least %.4g (estimate %.4g) at %v confidence; max_degradation is %v",
			d.Lower, d.Estimate, c.Confidence, c.MaxDegradation)
	}
	return fmt.Sprintf("the candidate's failure rate is higher by at least %.4g points (estimate %.4g) at %v confidence; max_degradation is %v points",
		d.Lower, d.Estimate, c.Confidence, c.MaxDegradation)
}

// Evaluate tallies rows and decides.
func Evaluate(c Config, rows []Row) Decision {
	var t Tally
	for _, r := range rows {
		t.Add(r)
	}
	return t.Decide(c)
}
