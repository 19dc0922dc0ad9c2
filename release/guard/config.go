package guard

import (
	"fmt"
	"math"
)

// Metric is what a guard watches.
type Metric string

// Metrics.
const (
	FailureRate Metric = "failure_rate" // share of outcomes with success false
	Score       Metric = "score"        // mean of the outcomes' score, 0..1, higher is better
)

// Action is what a trip does to the release.
type Action string

// Actions.
const (
	Pause    Action = "pause"
	Rollback Action = "rollback"
)

// Defaults and limits of a guard.
const (
	DefaultMinSamples = 200
	DefaultConfidence = 0.95
	MinMinSamples     = 10
	MaxMinSamples     = 10_000_000
	MinConfidence     = 0.5
	MaxConfidence     = 0.9999
)

// Config is a release's guard as the API takes and shows it.
// MaxDegradation is absolute in the metric's unit: percentage points for
// failure_rate (2 = 2 points), 0..1 for score.
type Config struct {
	Metric         Metric  `json:"metric"`
	MaxDegradation float64 `json:"max_degradation"`
	MinSamples     int     `json:"min_samples"`
	Confidence     float64 `json:"confidence"`
	Action         Action  `json:"action"`
	GateSteps      bool    `json:"gate_steps"`
}

// Input is a guard as received: absent members take their defaults
// (min_samples 200, confidence 0.95, action pause, gate_steps true).
type Input struct {
	Metric         Metric   `json:"metric"`
	MaxDegradation *float64 `json:"max_degradation"`
	MinSamples     *int     `json:"min_samples"`
	Confidence     *float64 `json:"confidence"`
	Action         Action   `json:"action"`
	GateSteps      *bool    `json:"gate_steps"`
}

// FieldError is a guard member out of range; Field is relative to the
// guard ("max_degradation").
type FieldError struct {
	Field, Detail string
}

func (e *FieldError) Error() string { return "guard: " + e.Field + ": " + e.Detail }

func bad(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Detail: fmt.Sprintf(format, args...)}
}

// Parse validates in and fills in the defaults.
func Parse(in Input) (Config, error) {
	c := Config{Metric: in.Metric, MinSamples: DefaultMinSamples, Confidence: DefaultConfidence, Action: Pause, GateSteps: true}
	switch in.Metric {
	case FailureRate, Score:
	default:
		return Config{}, bad("metric", `metric must be "failure_rate" or "score"`)
	}
	limit := 100.0
	if in.Metric == Score {
		limit = 1
	}
	if in.MaxDegradation == nil {
		return Config{}, bad("max_degradation", "max_degradation is required")
	}
	if d := *in.MaxDegradation; math.IsNaN(d) || d < 0 || d >= limit {
		return Config{}, bad("max_degradation", "max_degradation must be at least 0 and below %v (the metric's unit)", limit)
	}
	c.MaxDegradation = *in.MaxDegradation
	if in.MinSamples != nil {
		if n := *in.MinSamples; n < MinMinSamples || n > MaxMinSamples {
			return Config{}, bad("min_samples", "min_samples must be %d..%d", MinMinSamples, MaxMinSamples)
		}
		c.MinSamples = *in.MinSamples
	}
	if in.Confidence != nil {
		if v := *in.Confidence; math.IsNaN(v) || v < MinConfidence || v > MaxConfidence {
			return Config{}, bad("confidence", "confidence must be %v..%v", MinConfidence, MaxConfidence)
		}
		c.Confidence = *in.Confidence
	}
	switch in.Action {
	case "":
	case Pause, Rollback:
		c.Action = in.Action
	default:
		return Config{}, bad("action", `action must be "pause" or "rollback"`)
	}
	if in.GateSteps != nil {
		c.GateSteps = *in.GateSteps
	}
	return c, nil
}

// threshold is MaxDegradation in the statistics' unit (a proportion for
// failure_rate).
func (c Config) threshold() float64 {
	if c.Metric == FailureRate {
		return c.MaxDegradation / 100
	}
	return c.MaxDegradation
}

// tau is the mixing scale of the mSPRT: the size of difference it finds
// fastest. Johari et al. advise matching it to the effects one expects;
// a guard expects effects around its threshold, so tau is twice
// MaxDegradation, and at least 1 point (failure_rate) or 0.02 (score) so
// a zero threshold still has a sensible scale.
func (c Config) tau() float64 {
	floor := 0.01
	if c.Metric == Score {
		floor = 0.02
	}
	return math.Max(2*c.threshold(), floor)
}

// Validate checks a Config made in code the way Parse checks a request.
func (c Config) Validate() error {
	md, ms, cf, gs := c.MaxDegradation, c.MinSamples, c.Confidence, c.GateSteps
	_, err := Parse(Input{Metric: c.Metric, MaxDegradation: &md, MinSamples: &ms, Confidence: &cf, Action: c.Action, GateSteps: &gs})
	if err == nil && c.Action == "" {
		err = bad("action", `action must be "pause" or "rollback"`)
	}
	return err
}
