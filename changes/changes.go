package changes

import (
	"context"
	"errors"
	"slices"

	"gorm.io/gorm"

	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/problem"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/release/guard"
	"github.com/promptd/promptd/sqlstore"
)

// Options wire a Service.
type Options struct {
	// Access keeps protections and change requests; nil: nothing is ever
	// gated (a promptd without managed access).
	Access   *access.Service
	Prompts  *promptstore.Store
	Releases *release.Service
}

// Service runs gated writes. Safe for concurrent use.
type Service struct{ o Options }

// New returns a Service over o.
func New(o Options) *Service { return &Service{o: o} }

// Caller is who asks for a gated write: the token a change request is
// filed under (its principal is the requester), and the write as the
// caller sent it, which the request shows as its "request" (nil: the
// command).
type Caller struct {
	Token   *access.Token
	Request any
	// Filed, when set, runs in the transaction that files the change
	// request (an Idempotency-Key's record of the answer).
	Filed sqlstore.Then[*access.ChangeRequest]
}

// ErrNoRequester: a write the env's protection covers was asked for
// without a Caller.Token: a change request names its requester, so it is
// refused (nothing was written).
var ErrNoRequester = problem.New(problem.Forbidden, "changes: a gated write without the requester's token",
	"the env is protected: this write files a change request, which needs the requester's token")

// ErrGateMoving: the env's protection changed under the write three times
// in a row (set, lifted, set); nothing was written. Retry.
var ErrGateMoving = errors.Join(sqlstore.ErrUnavailable, errors.New("changes: the env's protection kept changing under the write; retry"))

// gated runs write, which decides inside its transaction whether the env's
// protection covers it (gate true: there is a protection to consult).
// Covered (*access.Gated): nothing was written, and a change request for
// cmd is filed instead. When the protection was lifted in between (Gate
// files nothing), the write runs again.
func gated[T any](ctx context.Context, s *Service, by Caller, action string, cmd any, write func(gate bool) (T, error)) (T, *access.ChangeRequest, error) {
	var zero T
	for range 3 {
		v, err := write(s.o.Access != nil)
		var g *access.Gated
		if !errors.As(err, &g) {
			return v, nil, err
		}
		if by.Token == nil {
			return zero, nil, ErrNoRequester // nothing was written
		}
		shown := by.Request
		if shown == nil {
			shown = cmd
		}
		cr, err := s.o.Access.Gate(ctx, by.Token, access.Filing{Action: action, Agent: g.Agent, Env: g.Env, Request: shown,
			Command: cmd, CommandVersion: CommandVersion, Target: g.Target}, by.Filed)
		if err != nil || cr != nil {
			return zero, cr, err
		}
	}
	return zero, nil, ErrGateMoving
}

// SwitchPointer moves in.Env's pointer (promptstore.Store.SwitchPointer),
// or files a change request when the env is protected. A switch without a
// precondition is refused by the store (428) before any gate.
func (s *Service) SwitchPointer(ctx context.Context, by Caller, in promptstore.SwitchInput, then ...sqlstore.Then[*promptstore.Env]) (*promptstore.Env, *access.ChangeRequest, error) {
	cmd := switchCommand{Version: in.Version, Reason: in.Reason}
	return gated(ctx, s, by, ActionPointerSwitch, cmd, func(gate bool) (*promptstore.Env, error) {
		if gate && in.ExpectedRevision != nil {
			expected := *in.ExpectedRevision
			in.Gate = func(tx *gorm.DB) error { return access.CheckGate(tx, in.Agent, in.Env, expected) }
		}
		return s.o.Prompts.SwitchPointer(ctx, in, then...)
	})
}

// RollbackEnv rolls in.Env back (release.Service.RollbackEnv); a
// to_version other than the default target is gated.
func (s *Service) RollbackEnv(ctx context.Context, by Caller, in release.EnvRollbackInput, then ...sqlstore.Then[*release.EnvRollback]) (*release.EnvRollback, *access.ChangeRequest, error) {
	cmd := envRollbackCommand{ToVersion: in.ToVersion, Reason: in.Reason}
	return gated(ctx, s, by, ActionEnvRollback, cmd, func(gate bool) (*release.EnvRollback, error) {
		if gate && in.ToVersion != 0 {
			in.Gate = func(tx *gorm.DB, cur *promptstore.Env, to int) error {
				if to == release.RollbackTarget(cur) {
					return nil
				}
				return access.CheckGate(tx, in.Agent, in.Env, cur.Revision)
			}
		}
		return s.o.Releases.RollbackEnv(ctx, in, then...)
	})
}

// LiftRevocation serves in.Version in in.Env again (a lift that changes
// something is gated). Revoking (in.Lift false) is never gated.
func (s *Service) LiftRevocation(ctx context.Context, by Caller, in promptstore.RevokeInput, then ...sqlstore.Then[*promptstore.Env]) (*promptstore.Env, *access.ChangeRequest, error) {
	if !in.Lift {
		e, err := s.o.Prompts.Revoke(ctx, in, then...)
		return e, nil, err
	}
	return gated(ctx, s, by, ActionLiftRevocation, liftCommand{Version: in.Version}, func(gate bool) (*promptstore.Env, error) {
		if gate {
			in.Gate = func(tx *gorm.DB, revision int64) error { return access.CheckGate(tx, in.Agent, in.Env, revision) }
		}
		return s.o.Prompts.Revoke(ctx, in, then...)
	})
}

// CreateRelease starts a release (gated in a protected env). Its id is
// chosen here when in.ID is empty, so that a gated create stores its
// overrides hashed under it.
func (s *Service) CreateRelease(ctx context.Context, by Caller, in release.CreateInput, then ...sqlstore.Then[*release.Release]) (*release.Release, *access.ChangeRequest, error) {
	if in.ID == "" {
		in.ID = s.o.Releases.NewID()
	}
	cmd := releaseCreateCommand{ReleaseID: in.ID, CandidateVersion: in.CandidateVersion, Percent: in.Percent, Stickiness: in.Stickiness,
		Steps: in.Steps, Message: in.Message, Overrides: hashOverrides(in.ID, in.Overrides), Guard: in.Guard}
	return gated(ctx, s, by, ActionReleaseCreate, cmd, func(gate bool) (*release.Release, error) {
		if gate {
			in.Gate = func(tx *gorm.DB, revision int64) error { return access.CheckGate(tx, in.Agent, in.Env, revision) }
		}
		return s.o.Releases.Create(ctx, in, then...)
	})
}

// PatchRelease changes release id's percent, overrides or guard (act is
// release.ActPercent, ActOverrides or ActGuard). Gated: a percent above
// the release's, a candidate override it does not have yet, a guard
// change while its guard's trip holds it paused.
func (s *Service) PatchRelease(ctx context.Context, by Caller, id string, act release.Action, in release.TransitionInput, then ...sqlstore.Then[*release.Release]) (*release.Release, *access.ChangeRequest, error) {
	cmd := releasePatchCommand{ReleaseID: id, Action: act, Percent: in.Percent, Reason: in.Reason, Overrides: hashOverrides(id, in.Overrides)}
	if in.Guard != nil {
		cmd.Guard = &guardChange{Config: in.Guard.Config}
	}
	covered := func(rel *release.Release) bool { return patchGated(rel, in) }
	return s.releaseWrite(ctx, by, ActionReleasePatch, cmd, id, act, in, covered, then)
}

// releaseWrite runs a gated transition of release id: gated when covered
// says so of the release as the transition locked it.
func (s *Service) releaseWrite(ctx context.Context, by Caller, action string, cmd any, id string, act release.Action,
	in release.TransitionInput, covered func(*release.Release) bool, then []sqlstore.Then[*release.Release]) (*release.Release, *access.ChangeRequest, error) {
	return gated(ctx, s, by, action, cmd, func(gate bool) (*release.Release, error) {
		if gate {
			in.Gate = func(tx *gorm.DB, rel *release.Release) error {
				if !covered(rel) {
					return nil
				}
				return access.CheckGate(tx, rel.Agent, rel.Env, rel.Revision)
			}
		}
		return s.o.Releases.Transition(ctx, id, act, in, then...)
	})
}

// TransitionRelease moves release id (pause, resume, promote, rollback).
// Gated: promote, and resuming a release its guard paused.
func (s *Service) TransitionRelease(ctx context.Context, by Caller, id string, act release.Action, in release.TransitionInput, then ...sqlstore.Then[*release.Release]) (*release.Release, *access.ChangeRequest, error) {
	action := map[release.Action]string{release.ActPromote: ActionReleasePromote, release.ActResume: ActionReleaseResume}[act]
	if action == "" {
		rel, err := s.o.Releases.Transition(ctx, id, act, in, then...)
		return rel, nil, err
	}
	covered := func(rel *release.Release) bool { return act == release.ActPromote || PausedByGuard(rel) }
	return s.releaseWrite(ctx, by, action, transitionCommand{ReleaseID: id, Reason: in.Reason}, id, act, in, covered, then)
}

// SetProtection creates, changes or (approvals 0) lifts next.Env's
// protection at expected revision; a change that weakens the protection in
// force is gated, approved under that protection.
func (s *Service) SetProtection(ctx context.Context, by Caller, next access.Protection, expected *int64) (*access.Protection, *access.ChangeRequest, error) {
	if err := next.Validate(); err != nil {
		return nil, nil, err
	}
	cmd := protectionCommand{Approvals: next.Approvals, Agents: next.Agents, Approvers: next.Approvers}
	return gated(ctx, s, by, ActionProtectionSet, cmd, func(bool) (*access.Protection, error) {
		return s.o.Access.SetProtectionGated(ctx, next, expected) // decided on the locked row
	})
}

// patchGated: a percent above the release's, a candidate override the
// release does not have yet (compared by hash: that is all it keeps), or
// a guard removed or replaced while the release is paused by its guard.
func patchGated(rel *release.Release, in release.TransitionInput) bool {
	if in.Percent != "" {
		next, ok1 := release.ParsePercent(in.Percent)
		cur, ok2 := release.ParsePercent(rel.Percent.String())
		if ok1 && ok2 && next > cur {
			return true
		}
	}
	if o := hashOverrides(rel.ID, in.Overrides); o != nil {
		for _, h := range o.Candidate {
			if !slices.Contains(rel.Overrides.Candidate, h) {
				return true
			}
		}
	}
	return in.Guard != nil && PausedByGuard(rel)
}

// PausedByGuard: a guard's trip paused the release and it has not resumed
// since (whatever became of the guard).
func PausedByGuard(rel *release.Release) bool {
	return rel.State == release.Paused && (rel.PausedByGuard || rel.Guard != nil && rel.Guard.State == guard.Tripped)
}

// Approve records by's approval of change request id; the approval that
// completes the count applies its command in the same transaction (the
// request applies once). A command whose target moved, or that fails,
// marks the request failed with the write's problem.
func (s *Service) Approve(ctx context.Context, id string, by *access.Token) (*access.ChangeRequest, error) {
	if s.o.Access == nil {
		return nil, access.ErrRequestNotFound
	}
	if by == nil {
		return nil, ErrNoRequester
	}
	return s.o.Access.Approve(ctx, id, by, s.apply)
}

// apply runs cr's command in the approval's transaction (commit, called
// with the write's transaction, marks cr applied there).
func (s *Service) apply(ctx context.Context, cr *access.ChangeRequest, commit func(tx *gorm.DB) error) error {
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
	case ActionPointerSwitch:
		var c switchCommand
		if err := command(cr, &c); err != nil {
			return err
		}
		_, err := s.o.Prompts.SwitchPointer(ctx, promptstore.SwitchInput{Agent: cr.Agent, Env: cr.Env, Version: c.Version,
			ExpectedRevision: &target, Reason: c.Reason}, func(tx *gorm.DB, _ *promptstore.Env) error { return commit(tx) })
		return err
	case ActionEnvRollback:
		var c envRollbackCommand
		if err := command(cr, &c); err != nil {
			return err
		}
		_, err := s.o.Releases.RollbackEnv(ctx, release.EnvRollbackInput{Agent: cr.Agent, Env: cr.Env, ExpectedRevision: &target,
			ToVersion: c.ToVersion, Reason: c.Reason}, func(tx *gorm.DB, _ *release.EnvRollback) error { return commit(tx) })
		return err
	case ActionLiftRevocation:
		var c liftCommand
		if err := command(cr, &c); err != nil {
			return err
		}
		_, err := s.o.Prompts.Revoke(ctx, promptstore.RevokeInput{Agent: cr.Agent, Env: cr.Env, Version: c.Version, Lift: true,
			ExpectedRevision: &target}, func(tx *gorm.DB, _ *promptstore.Env) error { return commit(tx) })
		return err
	case ActionReleaseCreate:
		var c releaseCreateCommand
		if err := command(cr, &c); err != nil {
			return err
		}
		_, err := s.o.Releases.Create(ctx, release.CreateInput{ID: c.ReleaseID, Agent: cr.Agent, Env: cr.Env,
			CandidateVersion: c.CandidateVersion, Percent: c.Percent, Stickiness: c.Stickiness, Steps: c.Steps,
			Message: c.Message, ExpectedRevision: &target, Overrides: c.Overrides.input(), Guard: c.Guard}, releaseThen(false))
		return err
	case ActionReleasePatch:
		var c releasePatchCommand
		if err := command(cr, &c); err != nil {
			return err
		}
		_, err := s.o.Releases.Transition(ctx, c.ReleaseID, c.Action, release.TransitionInput{ExpectedRevision: &target,
			Percent: c.Percent, Reason: c.Reason, Overrides: c.Overrides.input(), Guard: c.Guard.input()}, releaseThen(true))
		return err
	case ActionReleaseResume, ActionReleasePromote:
		var c transitionCommand
		if err := command(cr, &c); err != nil {
			return err
		}
		act := release.ActResume
		if cr.Action == ActionReleasePromote {
			act = release.ActPromote
		}
		_, err := s.o.Releases.Transition(ctx, c.ReleaseID, act, release.TransitionInput{ExpectedRevision: &target,
			Reason: c.Reason}, releaseThen(true))
		return err
	case ActionProtectionSet:
		var c protectionCommand
		if err := command(cr, &c); err != nil {
			return err
		}
		_, err := s.o.Access.SetProtection(ctx, access.Protection{Env: cr.Env, Approvals: c.Approvals, Agents: c.Agents,
			Approvers: c.Approvers}, &target, func(tx *gorm.DB, _ *access.Protection) error { return commit(tx) })
		return err
	}
	return &UnreadableError{ID: cr.ID, Action: cr.Action, Version: cr.CommandVersion, Err: errors.New("unknown action")}
}
