package guard

import (
	"math"

	"github.com/promptd/promptd/wire"
)

// radius is the half-width of the normal-mixture mSPRT confidence
// sequence (Johari et al. 2022, section 4) for an estimate with variance v,
// mixing variance tau2, at level alpha: the estimate ± radius holds the
// true value at every look with probability at least 1-alpha.
func radius(v, tau2, alpha float64) float64 {
	if v <= 0 {
		return 0
	}
	return math.Sqrt(v * (v + tau2) / tau2 * (2*math.Log(1/alpha) + math.Log((v+tau2)/v)))
}

// Difference is the combined estimate of the degradation (positive:
// the candidate is worse) with its always-valid confidence sequence, in
// the metric's unit as the API shows it (percentage points for
// failure_rate, 0..1 for score).
type Difference = wire.Difference

// difference combines the periods in which both arms have samples of
// metric m (see the package comment for the weights); ok is false when
// there is none.
func difference(c Config, periods map[int][2]Agg) (d, v float64, ok bool) {
	var w, sum, vsum float64
	for _, arms := range periods {
		b, cand := arms[0], arms[1]
		nb, nc := float64(b.samples(c.Metric)), float64(cand.samples(c.Metric))
		if nb == 0 || nc == 0 {
			continue
		}
		var dk, vk float64
		if c.Metric == Score {
			mb, vb := b.score()
			mc, vc := cand.score()
			dk, vk = mb-mc, vb/nb+vc/nc
		} else {
			pb, vb := b.rate()
			pc, vc := cand.rate()
			dk, vk = pc-pb, vb/nb+vc/nc
		}
		wk := nb * nc / (nb + nc)
		w += wk
		sum += wk * dk
		vsum += wk * wk * vk
	}
	if w == 0 {
		return 0, 0, false
	}
	return sum / w, vsum / (w * w), true
}
