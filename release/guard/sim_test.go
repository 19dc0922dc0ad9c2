package guard

import (
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

// The simulations of issue 16 ("must show" 1), with fixed seeds. Traffic
// is perSecond bucket outcomes a second, the candidate's share 20 % for
// the first half of the run and 50 % after (two percent periods), and the
// guard is evaluated after every second, as a continuously watching
// evaluator would. PROMPTD_GUARD_SIM_FULL=1 runs the long variants
// (1,000 A/A runs of an hour each) the figures of docs/guarded-releases.md come from.

const perSecond = 50

func fullSim() bool { return os.Getenv("PROMPTD_GUARD_SIM_FULL") == "1" }

// binomial draws Binomial(n, p) by inversion (cheap for the small n*p of
// a second's failures).
func binomial(r *rand.Rand, n int, p float64) int64 {
	if n == 0 || p <= 0 {
		return 0
	}
	q := math.Pow(1-p, float64(n))
	u := r.Float64()
	k, prob, cdf := 0, q, q
	for u > cdf && k < n {
		k++
		prob *= float64(n-k+1) / float64(k) * p / (1 - p)
		cdf += prob
	}
	return int64(k)
}

type simRun struct {
	tripped bool
	seconds int   // until the decision (or the horizon)
	samples int64 // candidate samples at the decision
}

// simulate runs one release for at most seconds, with failure rates pb
// (baseline) and pc (candidate); check decides whether it has tripped.
func simulate(r *rand.Rand, seconds int, pb, pc float64, check func(t *Tally) bool) simRun {
	var t Tally
	for s := 1; s <= seconds; s++ {
		period, share := 0, 0.2
		if s > seconds/2 {
			period, share = 1, 0.5
		}
		nc := int(math.Round(perSecond * share))
		nb := perSecond - nc
		t.Add(Row{Period: period, Arm: Baseline, N: int64(nb), Failures: binomial(r, nb, pb)})
		t.Add(Row{Period: period, Arm: Candidate, N: int64(nc), Failures: binomial(r, nc, pc)})
		if check(&t) {
			return simRun{tripped: true, seconds: s, samples: t.arms[1].N}
		}
	}
	return simRun{seconds: seconds, samples: t.arms[1].N}
}

func runMany(seed uint64, runs, seconds int, pb, pc float64, check func(t *Tally) bool) (trips int, medianSamples int64) {
	var at []int64
	for i := range runs {
		r := rand.New(rand.NewPCG(seed, uint64(i)))
		if res := simulate(r, seconds, pb, pc, check); res.tripped {
			trips++
			at = append(at, res.samples)
		}
	}
	if len(at) > 0 {
		slices.Sort(at)
		medianSamples = at[len(at)/2]
	}
	return trips, medianSamples
}

func guardCheck(c Config) func(t *Tally) bool {
	return func(t *Tally) bool { return t.Decide(c).State == Tripped }
}

func cfg(maxDeg float64) Config {
	return Config{Metric: FailureRate, MaxDegradation: maxDeg, MinSamples: DefaultMinSamples, Confidence: DefaultConfidence, Action: Rollback}
}

func TestGuard_whenCandidateFailsTwiceAsOften_tripsEveryRun(t *testing.T) {
	const runs, seconds = 200, 3600
	trips, median := runMany(1, runs, seconds, 0.05, 0.10, guardCheck(cfg(2)))
	t.Logf("10%% vs 5%%, max_degradation 2 points: tripped %d of %d runs; median candidate samples to decision %d", trips, runs, median)
	if trips != runs {
		t.Fatalf("tripped %d of %d runs, want all", trips, runs)
	}
}

func TestGuard_whenDegradationIsBelowMax_rarelyTrips(t *testing.T) {
	runs, seconds := 200, 900
	if fullSim() {
		seconds = 3600
	}
	trips, _ := runMany(2, runs, seconds, 0.05, 0.06, guardCheck(cfg(2)))
	t.Logf("6%% vs 5%%, max_degradation 2 points, %d s each: tripped %d of %d runs (%.1f %%)", seconds, trips, runs, 100*float64(trips)/float64(runs))
	if float64(trips) > 0.05*float64(runs) {
		t.Fatalf("tripped %d of %d runs, want at most 5 %%", trips, runs)
	}
}

// aaRuns is the A/A experiment: both arms fail 5 %, the guard with
// max_degradation 0 (any degradation at all is a trip) looks every second.
func aaRuns() (runs, seconds int) {
	if fullSim() {
		return 1000, 3600
	}
	return 200, 600
}

func TestGuard_whenArmsAreEqualAndCheckedEverySecond_falseTripsStayBelowAlpha(t *testing.T) {
	runs, seconds := aaRuns()
	trips, _ := runMany(3, runs, seconds, 0.05, 0.05, guardCheck(cfg(0)))
	rate := float64(trips) / float64(runs)
	t.Logf("A/A at 5 %%, max_degradation 0, checked every second for %d s: %d false trips in %d runs (%.2f %%; bound %.0f %%)",
		seconds, trips, runs, 100*rate, 100*(1-DefaultConfidence))
	if rate > 1-DefaultConfidence {
		t.Fatalf("false trip rate %.3f, want at most %.2f", rate, 1-DefaultConfidence)
	}
}

// naiveCheck is the control: a fixed-horizon one-sided z-test at 95 %
// (z > 1.645) on the pooled rates, looked at every second once both arms
// have 200 samples. It is valid for one look; looked at continuously it
// is not, which is why the guard uses a confidence sequence.
func naiveCheck(t *Tally) bool {
	b, c := t.arms[0], t.arms[1]
	if b.N < DefaultMinSamples || c.N < DefaultMinSamples {
		return false
	}
	pb, vb := b.rate()
	pc, vc := c.rate()
	return (pc-pb)/math.Sqrt(vb/float64(b.N)+vc/float64(c.N)) > 1.645
}

func TestNaiveZTest_whenCheckedEverySecond_tripsAAFarMoreThanAlpha(t *testing.T) {
	runs, seconds := aaRuns()
	trips, _ := runMany(3, runs, seconds, 0.05, 0.05, naiveCheck)
	rate := float64(trips) / float64(runs)
	t.Logf("control: naive z-test, A/A at 5 %%, checked every second for %d s: %d false trips in %d runs (%.1f %%)", seconds, trips, runs, 100*rate)
	if rate < 3*(1-DefaultConfidence) {
		t.Fatalf("naive false trip rate %.3f: expected well above %.2f (the control should show peeking breaks a fixed test)", rate, 1-DefaultConfidence)
	}
}

// At the boundary of the null (the candidate exactly max_degradation
// worse) the guard may trip at most 1 - confidence of the time.
func TestGuard_whenDegradationEqualsMax_tripsAtMostAlpha(t *testing.T) {
	runs, seconds := aaRuns()
	trips, _ := runMany(4, runs, seconds, 0.05, 0.07, guardCheck(cfg(2)))
	rate := float64(trips) / float64(runs)
	t.Logf("7%% vs 5%%, max_degradation 2 points, checked every second for %d s: %d trips in %d runs (%.2f %%)", seconds, trips, runs, 100*rate)
	if rate > 1-DefaultConfidence {
		t.Fatalf("trip rate %.3f at the boundary, want at most %.2f", rate, 1-DefaultConfidence)
	}
}
