package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/release/guard"
	"github.com/promptd/promptd/wire"
)

// guardBody is a release's guard as answers show it: its configuration
// and state.
func guardBody(g *release.GuardStatus) *wire.Guard {
	if g == nil {
		return nil
	}
	c := g.Config
	out := &wire.Guard{GuardConfig: wire.GuardConfig{Metric: string(c.Metric), MaxDegradation: c.MaxDegradation,
		MinSamples: c.MinSamples, Confidence: c.Confidence, Action: string(c.Action), GateSteps: c.GateSteps},
		State: string(g.State), Reason: g.Reason, Since: wire.At(g.Since)}
	if g.DecidedAt != nil {
		t := wire.At(*g.DecidedAt)
		out.DecidedAt = &t
	}
	return out
}

// guardInput decodes a request's guard member: absent (nil, false), null
// (nil, true: remove it) or an object (validated, defaults filled in).
func guardInput(raw json.RawMessage) (*guard.Config, bool, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0:
		return nil, false, nil
	case string(raw) == "null":
		return nil, true, nil
	}
	var in guard.Input
	if err := decodeObject(raw, "guard.", &in); err != nil {
		return nil, false, err
	}
	c, err := release.ParseGuard(in)
	return c, true, err
}

// releaseBody is r as release answers show it.
func releaseBody(r *release.Release) wire.Release {
	out := wire.Release{ID: r.ID, Agent: r.Agent, Env: r.Env, State: string(r.State), BaselineVersion: r.BaselineVersion,
		CandidateVersion: r.CandidateVersion, Percent: r.Percent, Stickiness: r.Stickiness, Steps: r.Steps,
		StepsApplied: r.StepsApplied, Revision: r.Revision, Message: r.Message, CreatedBy: r.CreatedBy,
		CreatedAt: wire.At(r.CreatedAt), UpdatedAt: wire.At(r.UpdatedAt), Guard: guardBody(r.Guard), Stats: r.Stats,
		PausedByGuard: r.PausedByGuard}
	if r.History != nil { // a release read whole (not a list item)
		o := r.Overrides
		out.Overrides = &o
	}
	if out.Steps == nil {
		out.Steps = []wire.Step{}
	}
	if r.NextStepAt != nil {
		t := wire.At(*r.NextStepAt)
		out.NextStepAt = &t
	}
	if len(r.History) > 0 {
		out.History = make([]wire.Transition, len(r.History))
		for i, h := range r.History {
			out.History[i] = wire.Transition{Revision: h.Revision, Action: h.Action, From: string(h.From), To: string(h.To),
				Percent: h.Percent, Actor: h.Actor, Reason: h.Reason, At: wire.At(h.At)}
		}
	}
	return out
}

func releaseEntity(r *release.Release) any { return releaseBody(r) }

// sendRelease answers with a release and its revision as ETag (what
// If-Match names on PATCH and the transitions), with its outcome
// statistics and guard state (not on a create: none yet, and a replay
// must answer the same body).
func (s *Server) sendRelease(c echo.Context, status int, r *release.Release) error {
	if status != http.StatusCreated {
		if err := s.rt.Releases.Describe(c.Request().Context(), r); err != nil {
			s.log.Warn("release statistics not read", "release", r.ID, "err", err)
		}
	}
	c.Response().Header().Set("ETag", revisionETag(r.Revision))
	c.Response().Header().Set(echo.HeaderCacheControl, "no-cache")
	return s.send(c, status, releaseBody(r))
}

// stepRequest is one step of a release's ramp.
type stepRequest struct {
	Percent json.RawMessage `json:"percent"`
	Promote bool            `json:"promote"`
	After   string          `json:"after"`
}

// createReleaseRequest is the body of POST .../envs/{env}/releases.
type createReleaseRequest struct {
	CandidateVersion *int              `json:"candidate_version"`
	Percent          json.RawMessage   `json:"percent"`
	Stickiness       string            `json:"stickiness"`
	Steps            []json.RawMessage `json:"steps"`
	Message          string            `json:"message"`
	ExpectedRevision *int64            `json:"expected_revision"`
	Overrides        *overridesRequest `json:"overrides"`
	Guard            json.RawMessage   `json:"guard"`

	percent string
	steps   []release.Step
	guard   *guard.Config
}

// overridesRequest are the ids forced onto each arm (raw; the server keeps
// only their hashes).
type overridesRequest struct {
	Candidate []string `json:"candidate"`
	Baseline  []string `json:"baseline"`
}

func (o *overridesRequest) input() *release.OverridesInput {
	if o == nil {
		return nil
	}
	return &release.OverridesInput{Candidate: o.Candidate, Baseline: o.Baseline}
}

func (r *createReleaseRequest) validate() error {
	if r.CandidateVersion == nil {
		return invalidField("candidate_version", "candidate_version is required")
	}
	var err error
	if r.percent, err = decimal(r.Percent, "percent", true); err != nil {
		return err
	}
	if len(r.Steps) > release.MaxSteps {
		return Errorf(release.CodeInvalidSteps, "at most %d steps", release.MaxSteps).With("field", "steps")
	}
	r.steps = make([]release.Step, len(r.Steps))
	for i, raw := range r.Steps {
		prefix := fmt.Sprintf("steps[%d].", i)
		var st stepRequest
		if err := decodeObject(raw, prefix, &st); err != nil {
			return err
		}
		p, err := decimal(st.Percent, prefix+"percent", false)
		if err != nil {
			return err
		}
		r.steps[i] = release.Step{Percent: json.Number(p), Promote: st.Promote, After: st.After}
	}
	r.guard, _, err = guardInput(r.Guard)
	return err
}

// handleCreateRelease: POST /v1/agents/{agent}/envs/{env}/releases (admin,
// Idempotency-Key). 201 with the release. The baseline is the pointer's
// version; expected_revision (or If-Match) is the pointer's revision.
func (s *Server) handleCreateRelease(c echo.Context) error {
	agent, env, err := envPath(c)
	if err != nil {
		return err
	}
	var req createReleaseRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	expected, viaHeader, err := precondition(c.Request(), req.ExpectedRevision, false)
	if err != nil {
		return err
	}
	in := release.CreateInput{Agent: agent, Env: env, CandidateVersion: *req.CandidateVersion,
		Percent: req.percent, Stickiness: req.Stickiness, Steps: req.steps, Message: req.Message, ExpectedRevision: expected,
		Overrides: req.Overrides.input(), Guard: req.guard}
	// The change request shows the command: overrides hashed under the
	// release id chosen for it.
	rel, cr, err := s.rt.Changes.CreateRelease(c.Request().Context(), s.caller(c, nil), in,
		recordAnswer(s, c, http.StatusCreated, releaseEntity))
	if done, err := s.settled(c, cr, err, viaHeader); done {
		return err
	}
	return s.sendRelease(c, http.StatusCreated, rel)
}

// handleGetRelease: GET /v1/releases/{id}, with its history.
func (s *Server) handleGetRelease(c echo.Context) error {
	rs := s.rt.Releases
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	rel, err := rs.Get(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return s.sendRelease(c, http.StatusOK, rel)
}

// handleListReleases: GET /v1/agents/{agent}/envs/{env}/releases, newest
// first, without their histories.
func (s *Server) handleListReleases(c echo.Context) error {
	rs := s.rt.Releases
	agent, env, err := envPath(c)
	if err != nil {
		return err
	}
	page, err := pageOf(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	items, next, err := rs.List(ctx, agent, env, page)
	if err != nil {
		return err
	}
	out := list[wire.Release]{Items: make([]wire.Release, len(items)), Next: cursor(next)}
	for i, r := range items {
		if r.Guard != nil { // the figures a guard's state stands on (one query each)
			if err := rs.Describe(ctx, r); err != nil {
				s.log.Warn("release statistics not read", "release", r.ID, "err", err)
			}
		}
		out.Items[i] = releaseBody(r)
	}
	return s.send(c, http.StatusOK, out)
}

// patchReleaseRequest is the body of PATCH /v1/releases/{id}.
type patchReleaseRequest struct {
	Percent          json.RawMessage   `json:"percent"`
	ExpectedRevision *int64            `json:"expected_revision"`
	Reason           string            `json:"reason"`
	Overrides        *overridesRequest `json:"overrides"`
	Guard            json.RawMessage   `json:"guard"`

	percent string
	guard   *release.GuardChange
}

// validate: a percent, overrides, a guard, or several of them.
func (r *patchReleaseRequest) validate() error {
	c, given, err := guardInput(r.Guard)
	if err != nil {
		return err
	}
	if given {
		r.guard = &release.GuardChange{Config: c}
	}
	r.percent, err = decimal(r.Percent, "percent", r.Overrides == nil && !given)
	return err
}

// action is the release change a PATCH asks for: a percent (with or
// without overrides and a guard), the override lists alone (with or
// without a guard), or the guard alone.
func (r *patchReleaseRequest) action() release.Action {
	switch {
	case r.percent == "" && r.Overrides != nil:
		return release.ActOverrides
	case r.percent == "" && r.guard != nil:
		return release.ActGuard // the guard alone: the steps are kept
	}
	return release.ActPercent
}

// handlePatchRelease: PATCH /v1/releases/{id} (admin) sets the percent of a
// running or paused release, up or down, and cancels its remaining steps;
// and/or sets its guard ("guard": null removes it; a guard alone keeps
// the steps).
// The release's revision is required (expected_revision or If-Match: 428
// precondition_required without).
func (s *Server) handlePatchRelease(c echo.Context) error {
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	var req patchReleaseRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	expected, viaHeader, err := requirePrecondition(c.Request(), req.ExpectedRevision, false)
	if err != nil {
		return err
	}
	shown := gatedPatchShown{ReleaseID: id, Percent: req.percent, Reason: req.Reason, Overrides: req.Overrides.input().HashedUnder(id), Guard: req.Guard}
	in := release.TransitionInput{ExpectedRevision: &expected, Percent: req.percent, Reason: req.Reason,
		Overrides: req.Overrides.input(), Guard: req.guard}
	rel, cr, err := s.rt.Changes.PatchRelease(c.Request().Context(), s.caller(c, shown), id, req.action(), in)
	if done, err := s.settled(c, cr, err, viaHeader); done {
		return err
	}
	return s.sendRelease(c, http.StatusOK, rel)
}

// transitionRequest is the (optional) body of POST /v1/releases/{id}/{action}.
type transitionRequest struct {
	ExpectedRevision *int64 `json:"expected_revision"`
	Reason           string `json:"reason"`
}

// handleTransition: POST /v1/releases/{id}/pause|resume|promote|rollback
// (admin). The body (optional) names the release's revision and a reason;
// If-Match may name the revision instead. A request for the state the
// release is in is a 200 no-op; a move the transition table does not
// allow is 409 invalid_transition with the release's state.
func (s *Server) handleTransition(action release.Action) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := param(c, "id")
		if err != nil {
			return err
		}
		var req transitionRequest
		if err := decodeOptional(c, &req); err != nil {
			return err
		}
		expected, viaHeader, err := precondition(c.Request(), req.ExpectedRevision, false)
		if err != nil {
			return err
		}
		rel, cr, err := s.rt.Changes.TransitionRelease(c.Request().Context(), s.caller(c, nil), id, action,
			release.TransitionInput{ExpectedRevision: expected, Reason: req.Reason})
		if done, err := s.settled(c, cr, err, viaHeader); done {
			return err
		}
		return s.sendRelease(c, http.StatusOK, rel)
	}
}
