package client

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/promptd/promptd/wire"
)

// Release states.
const (
	StateRunning    = wire.ReleaseRunning
	StatePaused     = wire.ReleasePaused
	StatePromoted   = wire.ReleasePromoted
	StateRolledBack = wire.ReleaseRolledBack
)

// Guard states.
const (
	GuardCollecting = wire.GuardCollecting
	GuardWatching   = wire.GuardWatching
	GuardTripped    = wire.GuardTripped
)

// The release shapes are promptd's wire types (package wire): the server
// encodes the same types.
type (
	// Release is a grayscale release of a candidate version in an env.
	Release = wire.Release
	// Guard is a release's guard, every member set, and where it stands.
	Guard = wire.Guard
	// Stats are a release's outcome figures: per arm, the degradation's
	// always-valid confidence sequence, and per reporting token.
	Stats = wire.ReleaseStats
	// ArmStats are one arm's bucket outcomes: Rate and Interval in
	// percent, scores 0..1. The intervals are nil until both arms have the
	// guard's minimum samples.
	ArmStats = wire.ArmStats
	// Step is one step of a release's ramp: a percent or a promotion, After
	// (a Go duration such as "10m") counted from the previous step.
	Step = wire.Step
	// Transition is one entry of a release's history.
	Transition = wire.Transition
)

// GuardConfig is a release's guard as a request gives it
// (api/openapi.yaml, Guarded releases): the metric ("failure_rate" or
// "score"), MaxDegradation in its unit (percentage points, or 0..1 for
// score), and optional members left zero for the server's defaults
// (min_samples 200, confidence 0.95, action "pause", gate_steps true).
type GuardConfig struct {
	Metric         string  `json:"metric"`
	MaxDegradation float64 `json:"max_degradation"`
	MinSamples     int     `json:"min_samples,omitempty"`
	Confidence     float64 `json:"confidence,omitempty"`
	Action         string  `json:"action,omitempty"`
	GateSteps      *bool   `json:"gate_steps,omitempty"`
}

// CreateReleaseRequest starts a release. Percent is a decimal number with
// at most 2 decimals, written as a string ("12.5") and sent as a JSON
// number; ExpectedRevision, when set, is the env pointer's revision.
type CreateReleaseRequest struct {
	CandidateVersion int          `json:"candidate_version"`
	Percent          json.Number  `json:"percent"`
	Stickiness       string       `json:"stickiness,omitempty"` // "user" (default) or "session"
	Steps            []Step       `json:"steps,omitempty"`
	Message          string       `json:"message,omitempty"`
	ExpectedRevision *int64       `json:"expected_revision,omitempty"`
	Guard            *GuardConfig `json:"guard,omitempty"`
}

// CreateRelease starts a release in env (admin, idempotent): another
// active release is ErrReleaseActive (ReleaseID names it), no pointer
// ErrNoPointer.
func (c *Client) CreateRelease(ctx context.Context, agent, env string, req CreateReleaseRequest) (*Release, error) {
	var r Release
	_, err := c.do(ctx, call{method: http.MethodPost, path: envPath(agent, env) + "/releases", body: req, idempotent: true}, &r)
	return ret(&r, err)
}

// GetRelease reads a release with its history.
func (c *Client) GetRelease(ctx context.Context, id string) (*Release, error) {
	var r Release
	_, err := c.do(ctx, call{method: http.MethodGet, path: "/v1/releases/" + seg(id)}, &r)
	return ret(&r, err)
}

// ListReleases lists env's releases, newest first.
func (c *Client) ListReleases(ctx context.Context, agent, env string, o ListOptions) (*Page[Release], error) {
	var p Page[Release]
	_, err := c.do(ctx, call{method: http.MethodGet, path: envPath(agent, env) + "/releases", query: o.query()}, &p)
	return ret(&p, err)
}

// SetPercent sets a running or paused release's percent (admin),
// cancelling its remaining steps; expectedRevision is the release's.
func (c *Client) SetPercent(ctx context.Context, id string, percent json.Number, expectedRevision int64, reason string) (*Release, error) {
	body := map[string]any{"percent": percent, "expected_revision": expectedRevision}
	if reason != "" {
		body["reason"] = reason
	}
	var r Release
	_, err := c.do(ctx, call{method: http.MethodPatch, path: "/v1/releases/" + seg(id), body: body}, &r)
	return ret(&r, err)
}

// SetGuard sets a running or paused release's guard (admin; nil removes
// it), keeping its steps; expectedRevision is the release's.
func (c *Client) SetGuard(ctx context.Context, id string, g *GuardConfig, expectedRevision int64) (*Release, error) {
	body := map[string]any{"guard": g, "expected_revision": expectedRevision}
	var r Release
	_, err := c.do(ctx, call{method: http.MethodPatch, path: "/v1/releases/" + seg(id), body: body}, &r)
	return ret(&r, err)
}

// TransitionOptions are the optional members of a release transition.
type TransitionOptions struct {
	ExpectedRevision *int64 `json:"expected_revision,omitempty"`
	Reason           string `json:"reason,omitempty"`
}

func (c *Client) transition(ctx context.Context, id, action string, o TransitionOptions) (*Release, error) {
	var r Release
	_, err := c.do(ctx, call{method: http.MethodPost, path: "/v1/releases/" + seg(id) + "/" + action, body: o}, &r)
	return ret(&r, err)
}

// Pause pauses a running release (admin); its arms stay as they are.
// Moves the table does not allow are ErrInvalidTransition; asking for the
// state the release is in is a no-op.
func (c *Client) Pause(ctx context.Context, id string, o TransitionOptions) (*Release, error) {
	return c.transition(ctx, id, "pause", o)
}

// Resume resumes a paused release (admin).
func (c *Client) Resume(ctx context.Context, id string, o TransitionOptions) (*Release, error) {
	return c.transition(ctx, id, "resume", o)
}

// Promote moves the env pointer to the candidate (admin).
func (c *Client) Promote(ctx context.Context, id string, o TransitionOptions) (*Release, error) {
	return c.transition(ctx, id, "promote", o)
}

// RollbackRelease ends the release at the baseline and revokes the
// candidate in the env (admin).
func (c *Client) RollbackRelease(ctx context.Context, id string, o TransitionOptions) (*Release, error) {
	return c.transition(ctx, id, "rollback", o)
}
