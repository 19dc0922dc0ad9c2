package guard

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func f(v float64) *float64 { return &v }
func i(v int) *int         { return &v }

func TestParse_whenMembersAreAbsent_takesDefaults(t *testing.T) {
	c, err := Parse(Input{Metric: FailureRate, MaxDegradation: f(2)})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Metric: FailureRate, MaxDegradation: 2, MinSamples: 200, Confidence: 0.95, Action: Pause, GateSteps: true}
	if c != want {
		t.Fatalf("got %+v, want %+v", c, want)
	}
}

func TestParse_whenAMemberIsOutOfRange_namesIt(t *testing.T) {
	for _, tc := range []struct {
		in    Input
		field string
	}{
		{Input{Metric: "latency", MaxDegradation: f(1)}, "metric"},
		{Input{Metric: FailureRate}, "max_degradation"},
		{Input{Metric: FailureRate, MaxDegradation: f(-1)}, "max_degradation"},
		{Input{Metric: FailureRate, MaxDegradation: f(100)}, "max_degradation"},
		{Input{Metric: Score, MaxDegradation: f(1)}, "max_degradation"},
		{Input{Metric: FailureRate, MaxDegradation: f(2), MinSamples: i(1)}, "min_samples"},
		{Input{Metric: FailureRate, MaxDegradation: f(2), Confidence: f(1)}, "confidence"},
		{Input{Metric: FailureRate, MaxDegradation: f(2), Confidence: f(0.1)}, "confidence"},
		{Input{Metric: FailureRate, MaxDegradation: f(2), Action: "delete"}, "action"},
	} {
		_, err := Parse(tc.in)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("Parse(%+v) = %v, want a FieldError on %s", tc.in, err, tc.field)
		}
	}
}

func TestDecide_beforeBothArmsHaveMinSamples_keepsCollecting(t *testing.T) {
	c := cfg(0)
	// An obvious degradation, but the baseline has 199 samples.
	d := Evaluate(c, []Row{{Arm: Baseline, N: 199}, {Arm: Candidate, N: 5000, Failures: 2500}})
	if d.State != Collecting {
		t.Fatalf("state %s, want collecting", d.State)
	}
	d = Evaluate(c, []Row{{Arm: Baseline, N: 200}, {Arm: Candidate, N: 5000, Failures: 2500}})
	if d.State != Tripped || d.Reason == "" {
		t.Fatalf("state %s (%q), want tripped with a reason", d.State, d.Reason)
	}
}

func TestDecide_onScores_tripsWhenTheCandidateScoresLower(t *testing.T) {
	c := Config{Metric: Score, MaxDegradation: 0.05, MinSamples: 200, Confidence: 0.95}
	rows := []Row{
		{Arm: Baseline, N: 2000, Scored: 2000, ScoreSum: 2000 * 0.8, ScoreSq: 2000 * (0.8*0.8 + 0.01)},
		{Arm: Candidate, N: 2000, Scored: 2000, ScoreSum: 2000 * 0.6, ScoreSq: 2000 * (0.6*0.6 + 0.01)},
	}
	if d := Evaluate(c, rows); d.State != Tripped {
		t.Fatalf("state %s (%+v), want tripped", d.State, d.Stats.Difference)
	}
	rows[1].ScoreSum, rows[1].ScoreSq = 2000*0.79, 2000*(0.79*0.79+0.01)
	if d := Evaluate(c, rows); d.State != Watching {
		t.Fatalf("state %s (%+v), want watching", d.State, d.Stats.Difference)
	}
}

// Arms are compared within periods: a candidate that got more of the
// traffic in a period when everybody failed more (a bad hour) is not
// worse, though pooled rates say it is.
func TestDecide_whenRatesShiftBetweenPeriods_comparesWithinPeriods(t *testing.T) {
	rows := []Row{
		{Period: 0, Arm: Baseline, N: 9000, Failures: 450}, // 5 % / 5 % at 10 %
		{Period: 0, Arm: Candidate, N: 1000, Failures: 50},
		{Period: 1, Arm: Baseline, N: 1000, Failures: 200}, // 20 % / 20 % at 90 %
		{Period: 1, Arm: Candidate, N: 9000, Failures: 1800},
	}
	d := Evaluate(cfg(2), rows)
	if d.State != Watching || d.Stats.Difference.Estimate != 0 {
		t.Fatalf("state %s, difference %+v: want watching with estimate 0", d.State, d.Stats.Difference)
	}
	// Pooled the candidate fails 18.5 % and the baseline 6.5 %.
	if d.Stats.Candidate.Rate != 18.5 || d.Stats.Baseline.Rate != 6.5 {
		t.Fatalf("pooled rates %v / %v", d.Stats.Candidate.Rate, d.Stats.Baseline.Rate)
	}
}

// With few samples the confidence sequence is wider than the metric's
// range; the interval shown stays within it (a failure-rate difference
// in -100..100 points, a score difference in -1..1).
func TestDecide_withFewSamples_theDifferenceStaysWithinTheMetricsRange(t *testing.T) {
	few := cfg(0)
	few.MinSamples = 1 // the intervals are shown from the minimum samples on
	for _, c := range []Config{few, {Metric: Score, MaxDegradation: 0.05, MinSamples: 1, Confidence: 0.95}} {
		limit := 100.0
		if c.Metric == Score {
			limit = 1
		}
		d := Evaluate(c, []Row{{Arm: Baseline, N: 20, Failures: 2, Scored: 20, ScoreSum: 16, ScoreSq: 13},
			{Arm: Candidate, N: 3, Failures: 1, Scored: 3, ScoreSum: 2, ScoreSq: 1.5}})
		diff := d.Stats.Difference
		if diff == nil {
			t.Fatalf("%s: no difference", c.Metric)
		}
		if diff.Lower < -limit || diff.Upper > limit || diff.Lower > diff.Estimate || diff.Estimate > diff.Upper {
			t.Errorf("%s: difference %+v, want within [-%v, %v] around the estimate", c.Metric, *diff, limit, limit)
		}
		if c.Metric == FailureRate && (diff.Lower != -limit || diff.Upper != limit) {
			t.Errorf("%s: difference %+v: with 3 candidate samples the sequence spans more than the range (the control that the clip is reached)", c.Metric, *diff)
		}
	}
}

// A handful of outcomes gives a confidence sequence narrower than it can
// honestly be (one score per arm showed [0.954, 1]): no interval is shown
// until both arms have the guard's minimum samples, then every one is.
func TestDecide_beforeBothArmsHaveMinSamples_showsNoInterval(t *testing.T) {
	for _, c := range []Config{cfg(2), {Metric: Score, MaxDegradation: 0.05, MinSamples: 200, Confidence: 0.95}} {
		one := []Row{{Arm: Baseline, N: 1, Scored: 1, ScoreSum: 1, ScoreSq: 1}, {Arm: Candidate, N: 1, Scored: 1, ScoreSum: 1, ScoreSq: 1}}
		few := []Row{{Arm: Baseline, N: 5000, Scored: 5000, ScoreSum: 4000, ScoreSq: 3300, Token: "a"},
			{Arm: Candidate, N: 199, Scored: 199, ScoreSum: 150, ScoreSq: 120, Token: "a"}}
		for _, rows := range [][]Row{one, few} {
			st := Evaluate(c, rows).Stats
			for name, a := range map[string]ArmStats{"baseline": st.Baseline, "candidate": st.Candidate,
				"token baseline": st.ByToken["a"].Baseline, "token candidate": st.ByToken["a"].Candidate} {
				if b := intervals(a); b != `{"interval":null,"score_interval":null}` {
					t.Errorf("%s, %s with %d samples: %s; want no interval", c.Metric, name, a.N, b)
				}
			}
			if st.Difference != nil {
				t.Errorf("%s with %d and %d samples: difference %+v; want none", c.Metric, rows[0].N, rows[1].N, *st.Difference)
			}
		}
		// The control: at the minimum every interval is there.
		enough := []Row{{Arm: Baseline, N: 200, Scored: 200, ScoreSum: 160, ScoreSq: 130, Token: "a"},
			{Arm: Candidate, N: 200, Scored: 200, ScoreSum: 150, ScoreSq: 120, Token: "a"}}
		st := Evaluate(c, enough).Stats
		for name, a := range map[string]ArmStats{"baseline": st.Baseline, "candidate": st.Candidate,
			"token baseline": st.ByToken["a"].Baseline, "token candidate": st.ByToken["a"].Candidate} {
			if b := intervals(a); strings.Contains(b, "null") {
				t.Errorf("%s, %s at min_samples: %s; want both intervals", c.Metric, name, b)
			}
		}
		if st.Difference == nil {
			t.Errorf("%s at min_samples: no difference", c.Metric)
		}
	}
}

// intervals is a's two intervals as the API shows them.
func intervals(a ArmStats) string {
	var v struct {
		Interval      any `json:"interval"`
		ScoreInterval any `json:"score_interval"`
	}
	b, _ := json.Marshal(a)
	_ = json.Unmarshal(b, &v)
	b, _ = json.Marshal(v)
	return string(b)
}
