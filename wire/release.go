package wire

import "encoding/json"

// States of a release.
const (
	ReleaseRunning    = "running"
	ReleasePaused     = "paused"
	ReleasePromoted   = "promoted"
	ReleaseRolledBack = "rolled_back"
)

// Release is a grayscale release of a candidate version in an env, as
// every release answer shows it: schema Release. History and Overrides are
// set on a release read whole, not on list items; Guard is nil when
// unguarded; Stats is nil when the server has no figures (a create).
type Release struct {
	ID               string       `json:"id"`
	Agent            string       `json:"agent"`
	Env              string       `json:"env"`
	State            string       `json:"state"` // ReleaseRunning, ReleasePaused, ...
	BaselineVersion  int          `json:"baseline_version"`
	CandidateVersion int          `json:"candidate_version"`
	Percent          json.Number  `json:"percent"`
	Stickiness       string       `json:"stickiness"`
	Steps            []Step       `json:"steps"`
	StepsApplied     int          `json:"steps_applied"`
	NextStepAt       *Time        `json:"next_step_at"`
	Revision         int64        `json:"revision"`
	Message          string       `json:"message"`
	CreatedBy        string       `json:"created_by"`
	CreatedAt        Time         `json:"created_at"`
	UpdatedAt        Time         `json:"updated_at"`
	History          []Transition `json:"history,omitempty"`
	// Overrides are the hashed keys forced onto each arm (never raw ids:
	// they are not stored).
	Overrides *Overrides `json:"overrides,omitempty"`
	Guard     *Guard     `json:"guard"`
	// PausedByGuard: a guard's trip paused the release and it has not
	// resumed since, whatever became of the guard: resuming it is gated.
	PausedByGuard bool          `json:"paused_by_guard"`
	Stats         *ReleaseStats `json:"stats"`
}

// Active reports a running or paused release.
func (r *Release) Active() bool { return r.State == ReleaseRunning || r.State == ReleasePaused }

// Step is one step of a release's ramp: a percent or a promotion, After
// (a Go duration such as "10m") counted from the previous step.
type Step struct {
	Percent json.Number `json:"percent,omitempty"`
	Promote bool        `json:"promote,omitempty"`
	After   string      `json:"after"`
}

// Transition is one entry of a release's history.
type Transition struct {
	Revision int64       `json:"revision"`
	Action   string      `json:"action"`
	From     string      `json:"from"`
	To       string      `json:"to"`
	Percent  json.Number `json:"percent"`
	Actor    string      `json:"actor"`
	Reason   string      `json:"reason,omitempty"`
	At       Time        `json:"at"`
}

// Overrides are the keys forced onto each arm of a release, hashed under
// the release.
type Overrides struct {
	Candidate []string `json:"candidate"`
	Baseline  []string `json:"baseline"`
}

// States of a release's guard.
const (
	GuardCollecting = "collecting"
	GuardWatching   = "watching"
	GuardTripped    = "tripped"
)

// GuardConfig is a release guard's configuration as answers show it, every
// member set (a request may leave members out for their defaults).
type GuardConfig struct {
	Metric         string  `json:"metric"` // "failure_rate" or "score"
	MaxDegradation float64 `json:"max_degradation"`
	MinSamples     int     `json:"min_samples"`
	Confidence     float64 `json:"confidence"`
	Action         string  `json:"action"` // "pause" or "rollback"
	GateSteps      bool    `json:"gate_steps"`
}

// Guard is a release's guard and where it stands: schema ReleaseGuard.
type Guard struct {
	GuardConfig
	State     string `json:"state"` // GuardCollecting, GuardWatching or GuardTripped
	DecidedAt *Time  `json:"decided_at,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Since     Time   `json:"since"`
}

// ReleaseStats are a release's outcome figures: per arm, the degradation's
// always-valid confidence sequence (nil until both arms have the guard's
// minimum samples), and per reporting token: schema ReleaseStats.
type ReleaseStats struct {
	Baseline   ArmStats             `json:"baseline"`
	Candidate  ArmStats             `json:"candidate"`
	Difference *Difference          `json:"difference"`
	ByToken    map[string]TokenArms `json:"by_token"`
}

// ArmStats are one arm's bucket outcomes: Rate and Interval in percent,
// scores 0..1; the intervals are nil until both arms have the guard's
// minimum samples (schema ArmStats).
type ArmStats struct {
	N             int64       `json:"n"`
	Failures      int64       `json:"failures"`
	Rate          float64     `json:"rate"`
	ScoreMean     *float64    `json:"score_mean"`
	Interval      *[2]float64 `json:"interval"`
	Scored        int64       `json:"scored"`
	ScoreInterval *[2]float64 `json:"score_interval"`
}

// Difference is the degradation's estimate and its confidence sequence.
type Difference struct {
	Estimate float64 `json:"estimate"`
	Lower    float64 `json:"lower"`
	Upper    float64 `json:"upper"`
}

// TokenArms are the arms' figures of the outcomes one token reported.
type TokenArms struct {
	Baseline  ArmStats `json:"baseline"`
	Candidate ArmStats `json:"candidate"`
}
