package api

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/labstack/echo/v4"
	"gorm.io/gorm"

	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/release/guard"
	"github.com/promptd/promptd/sqlstore"
)

// The gated writes besides the pointer switch (api/openapi.yaml, Protected envs).
// Never gated: pause, revocation, release rollback, an env rollback to its
// default target, a percent decrease, overrides that add no candidate.
const (
	actionEnvRollback    = "env.rollback"    // to a to_version other than the default target
	actionLiftRevocation = "revocation.lift" // of a revoked version
	actionReleaseCreate  = "release.create"  // any
	actionReleasePatch   = "release.patch"   // a percent increase, or candidate overrides added
	actionReleaseResume  = "release.resume"  // of a release its guard paused
	actionReleasePromote = "release.promote" // any
	actionProtectionSet  = "protection.set"  // a PUT that weakens it (access.Protection.WeakenedBy)
)

var errUnreadable = errors.New("api: unreadable change request")

// liftRequest is the stored request of a gated lift.
type liftRequest struct {
	Version int `json:"version"`
}

// gatedOverrides are a gated write's overrides, hashed under the release
// id (raw ids are never stored, see release.Overrides).
type gatedOverrides struct {
	Candidate []string `json:"candidate"`
	Baseline  []string `json:"baseline"`
}

func hashedOverrides(releaseID string, o *overridesRequest) *gatedOverrides {
	if o == nil {
		return nil
	}
	out := &gatedOverrides{Candidate: []string{}, Baseline: []string{}}
	for _, id := range o.Candidate {
		out.Candidate = append(out.Candidate, release.OverrideHash(releaseID, id))
	}
	for _, id := range o.Baseline {
		out.Baseline = append(out.Baseline, release.OverrideHash(releaseID, id))
	}
	return out
}

func (o *gatedOverrides) input() *release.OverridesInput {
	if o == nil {
		return nil
	}
	return &release.OverridesInput{Candidate: o.Candidate, Baseline: o.Baseline, Hashed: true}
}

// gatedCreate is the stored request of a gated release create: the
// release's id is chosen up front, so that its overrides are stored hashed.
type gatedCreate struct {
	ReleaseID        string          `json:"release_id"`
	CandidateVersion int             `json:"candidate_version"`
	Percent          string          `json:"percent"`
	Stickiness       string          `json:"stickiness,omitempty"`
	Steps            []release.Step  `json:"steps"`
	Message          string          `json:"message,omitempty"`
	Overrides        *gatedOverrides `json:"overrides,omitempty"`
	Guard            *guard.Config   `json:"guard,omitempty"`
}

// gatedPatch is the stored request of a gated PATCH of a release.
type gatedPatch struct {
	ReleaseID string          `json:"release_id"`
	Percent   string          `json:"percent,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	Overrides *gatedOverrides `json:"overrides,omitempty"`
	Guard     json.RawMessage `json:"guard,omitempty"`
}

// gatedTransition is the stored request of a gated resume or promote.
type gatedTransition struct {
	ReleaseID string `json:"release_id"`
	Reason    string `json:"reason,omitempty"`
}

// gateIn is gate with the context the change request is written with (an
// Idempotency-Key's record of the 202).
func (s *Server) gateIn(ctx context.Context, c echo.Context, action, agent, env string, request any, target int64) (bool, error) {
	if s.cfg.Access == nil {
		return false, nil
	}
	cr, err := s.cfg.Access.Gate(ctx, tokenOf(c), action, agent, env, request, target)
	if err != nil || cr == nil {
		return false, err
	}
	c.Response().Header().Set("Location", "/v1/change-requests/"+cr.ID)
	return true, s.send(c, 202, map[string]any{"change_request": changeRequestBody(cr)})
}

func changeRequestEntity(cr *access.ChangeRequest) any {
	return map[string]any{"change_request": changeRequestBody(cr)}
}

// gatedWrite runs a write that decides inside its own transaction, from
// the rows it locks, whether env's protection covers it: write gets
// gated true when promptd has an access service, and then hands its
// domain call a gate that calls access.CheckGate. When the gate says
// *access.Gated, the write has rolled back with nothing written, and a
// change request (request(g)) is filed instead: 202. When the protection
// was lifted in between (Gate files nothing), the write runs again. A
// gate that cannot be read refuses the write (its error).
func (s *Server) gatedWrite(c echo.Context, action string, request func(g *access.Gated) any, write func(gated bool) error) error {
	for range 3 {
		err := write(s.cfg.Access != nil)
		var g *access.Gated
		if !errors.As(err, &g) {
			return err
		}
		if handled, err := s.gate(c, action, g.Agent, g.Env, request(g), g.Target); handled || err != nil {
			return err
		}
	}
	return errGateMoving
}

var errGateMoving = errors.Join(sqlstore.ErrUnavailable, errors.New("api: the env's protection kept changing under the write; retry"))

// patchGated: a percent above the release's, a candidate override the
// release does not have yet (compared by hash: that is all it keeps), or
// a guard removed or replaced while the release is paused by its guard.
func patchGated(rel *release.Release, req *patchReleaseRequest) bool {
	if req.percent != "" {
		next, ok1 := release.ParsePercent(req.percent)
		cur, ok2 := release.ParsePercent(rel.Percent.String())
		if ok1 && ok2 && next > cur {
			return true
		}
	}
	if req.Overrides != nil {
		for _, id := range req.Overrides.Candidate {
			if !slices.Contains(rel.Overrides.Candidate, release.OverrideHash(rel.ID, id)) {
				return true
			}
		}
	}
	return req.guard != nil && pausedByGuard(rel)
}

// pausedByGuard: a guard's trip paused the release and it has not resumed
// since (whatever became of the guard).
func pausedByGuard(rel *release.Release) bool {
	return rel.State == release.Paused && (rel.PausedByGuard || rel.Guard != nil && rel.Guard.State == guard.Tripped)
}

// applyGated is apply for the actions of this file.
func (s *Server) applyGated(ctx context.Context, cr *access.ChangeRequest, commit func(tx *gorm.DB) error) error {
	target := cr.TargetRevision
	releaseThen := func(check bool) sqlstore.Then[*release.Release] {
		return func(tx *gorm.DB, r *release.Release) error {
			// A transition to the state the release is in already changes
			// nothing, and so does not check the revision: this does.
			if check && r.Revision != target+1 {
				return &promptstore.RevisionConflict{Expected: target, Current: r.Revision}
			}
			return commit(tx)
		}
	}
	switch cr.Action {
	case actionEnvRollback:
		var req envRollbackRequest
		if err := json.Unmarshal(cr.Request, &req); err != nil || req.ToVersion == nil {
			return errUnreadable
		}
		_, err := s.cfg.Releases.RollbackEnv(ctx, release.EnvRollbackInput{Agent: cr.Agent, Env: cr.Env, ExpectedRevision: &target,
			ToVersion: *req.ToVersion, Reason: req.Reason}, func(tx *gorm.DB, _ *release.EnvRollback) error { return commit(tx) })
		return err
	case actionLiftRevocation:
		var req liftRequest
		if err := json.Unmarshal(cr.Request, &req); err != nil {
			return errUnreadable
		}
		_, err := s.cfg.Prompts.Revoke(ctx, promptstore.RevokeInput{Agent: cr.Agent, Env: cr.Env, Version: req.Version, Lift: true,
			ExpectedRevision: &target}, func(tx *gorm.DB, _ *promptstore.Env) error { return commit(tx) })
		return err
	case actionReleaseCreate:
		var req gatedCreate
		if err := json.Unmarshal(cr.Request, &req); err != nil {
			return errUnreadable
		}
		_, err := s.cfg.Releases.Create(ctx, release.CreateInput{ID: req.ReleaseID, Agent: cr.Agent, Env: cr.Env,
			CandidateVersion: req.CandidateVersion, Percent: req.Percent, Stickiness: req.Stickiness, Steps: req.Steps,
			Message: req.Message, ExpectedRevision: &target, Overrides: req.Overrides.input(), Guard: req.Guard}, releaseThen(false))
		return err
	case actionReleasePatch:
		var req gatedPatch
		if err := json.Unmarshal(cr.Request, &req); err != nil {
			return errUnreadable
		}
		p := patchReleaseRequest{Reason: req.Reason, Guard: req.Guard, percent: req.Percent}
		if req.Overrides != nil {
			p.Overrides = &overridesRequest{}
		}
		if c, given, err := guardInput(req.Guard); err != nil {
			return err
		} else if given {
			p.guard = &release.GuardChange{Config: c}
		}
		_, err := s.cfg.Releases.Transition(ctx, req.ReleaseID, p.action(), release.TransitionInput{ExpectedRevision: &target,
			Percent: req.Percent, Reason: req.Reason, Overrides: req.Overrides.input(), Guard: p.guard}, releaseThen(true))
		return err
	case actionReleaseResume, actionReleasePromote:
		var req gatedTransition
		if err := json.Unmarshal(cr.Request, &req); err != nil {
			return errUnreadable
		}
		act := release.ActResume
		if cr.Action == actionReleasePromote {
			act = release.ActPromote
		}
		_, err := s.cfg.Releases.Transition(ctx, req.ReleaseID, act, release.TransitionInput{ExpectedRevision: &target,
			Reason: req.Reason}, releaseThen(true))
		return err
	case actionProtectionSet:
		var req putProtectionRequest
		if err := json.Unmarshal(cr.Request, &req); err != nil || req.Approvals == nil {
			return errUnreadable
		}
		_, err := s.cfg.Access.SetProtection(ctx, access.Protection{Env: cr.Env, Approvals: *req.Approvals, Agents: req.Agents,
			Approvers: req.Approvers}, &target, func(tx *gorm.DB, _ *access.Protection) error { return commit(tx) })
		return err
	}
	return errors.New("api: unknown change request action " + cr.Action)
}
