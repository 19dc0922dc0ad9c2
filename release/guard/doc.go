// Package guard is the statistics of guarded releases: per-arm aggregates
// of outcomes, an always-valid confidence sequence for "candidate minus
// baseline", and the decision a guard takes from them. It is pure (no SQL,
// no clock): package release feeds it the aggregates it reads and applies
// the decision through its normal transition.
//
// # Method
//
// The test is the mixture sequential probability ratio test (mSPRT) with a
// normal mixture of Johari, Koomen, Pekelis and Walsh, "Always Valid
// Inference: Continuous Monitoring of A/B Tests" (Operations Research 70(3),
// 2022; arXiv:1512.04922, 2015). For an estimate d of the difference with
// variance V and a N(0, tau²) mixing distribution over the true difference,
// the likelihood ratio against "the difference is theta" is
//
//	Lambda(theta) = sqrt(V/(V+tau²)) * exp(tau² (d-theta)² / (2 V (V+tau²)))
//
// a non-negative martingale under theta, so by Ville's inequality it ever
// exceeds 1/alpha with probability at most alpha, however often it is
// looked at. The set of theta it has not rejected is the always-valid
// confidence sequence d ± r with
//
//	r = sqrt( V (V+tau²)/tau² * (2 ln(1/alpha) + ln((V+tau²)/V)) )
//
// (Johari et al., section 4, the normal-mixture closed form). The guard
// uses its lower bound as a one-sided bound at level alpha = 1-confidence:
// P(ever theta < lower) <= P(ever theta outside the sequence) <= alpha, so
// it is valid (a little conservative) under continuous monitoring.
// Variances are plug-in estimates (the paper's large-sample treatment of
// Bernoulli and bounded outcomes), with proportions smoothed by half a
// failure so an arm with no failures yet is not taken as certain.
//
// The difference is oriented so that positive is worse: failure rate of
// the candidate minus that of the baseline; for scores (higher is better)
// the baseline's mean minus the candidate's.
//
// # Percent periods
//
// Arms are compared only within a percent period (outcomes between two
// percent changes), never pooled across them: when the share changes, so
// may the traffic and the time of day, and a pooled comparison can show a
// difference neither period has (Simpson's paradox). The per-period
// differences d_k are combined with the stratified weights
// w_k = n_b n_c / (n_b + n_c) (the effective sample size of the period,
// fixed by the counts, not by the outcomes): d = sum w_k d_k / W and
// V = sum w_k² V_k / W², W = sum w_k. When the per-outcome variance is the
// same in every period (sigma²) this is exactly the inverse-variance
// combination (V_k = sigma²/w_k, V = sigma²/W), whose score d/V is the sum
// of the periods' independent scores, so the mixture martingale argument
// holds across period boundaries.
package guard
