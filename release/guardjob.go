package release

import (
	"context"
	"errors"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/release/guard"
)

// GuardJob names the cluster-singleton job that evaluates guards: its
// lock key is locks.Keys.Job(GuardJob).
const GuardJob = "release-guard"

// GuardActor is the actor of the transitions a guard makes.
const GuardActor = "guard"

// guardLeaseTTL is how long a replica that died mid-run keeps the others
// from the job (locks.RunExclusive caps it at locks.MaxRunTTL); a live one
// keeps its lease alive.
const guardLeaseTTL = locks.MaxRunTTL

// RunGuards evaluates the guard of every running guarded release and
// trips the ones whose degradation is shown: their pause or rollback goes
// through the normal transition, conditioned on the revision the figures
// were read at (a release changed meanwhile is evaluated again next run),
// audited release.guard_tripped with both arms' figures. It is a cluster
// singleton (locks.RunExclusive on the GuardJob key); without the lock
// store it runs anyway, the revision condition deciding.
func (s *Service) RunGuards(ctx context.Context) (tripped int, err error) {
	if s.o.Outcomes == nil {
		return 0, nil
	}
	key, err := s.o.Keys.Job(GuardJob)
	if err != nil {
		return 0, err
	}
	_, err = locks.RunExclusive(ctx, s.o.Locker, key, guardLeaseTTL, func(ctx context.Context) (err error) {
		tripped, err = s.runGuards(ctx)
		return err
	}, locks.RunUnlockedIfUnavailable())
	return tripped, err
}

func (s *Service) runGuards(ctx context.Context) (tripped int, err error) {
	sctx, cancel := context.WithTimeout(ctx, s.o.SQLTimeout)
	var ids []string
	err = s.db.WithContext(sctx).Raw(`SELECT id FROM releases WHERE state = ? AND guard IS NOT NULL AND guard_tripped_at_ms IS NULL
		ORDER BY created_at_ms LIMIT 1000`, string(Running)).Scan(&ids).Error
	cancel()
	if err != nil {
		return 0, storeErr(err)
	}
	s.o.GuardMetrics.evaluated(len(ids))
	var errs []error
	for _, id := range ids {
		if ctx.Err() != nil {
			break
		}
		ok, err := s.evaluate(ctx, id)
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			tripped++
		}
	}
	return tripped, errors.Join(errs...)
}

// evaluate decides one release's guard and trips it when it must.
func (s *Service) evaluate(ctx context.Context, id string) (tripped bool, err error) {
	rel, err := s.Get(ctx, id)
	if err != nil || rel.State != Running || rel.Guard == nil || rel.Guard.State == guard.Tripped {
		return false, err
	}
	d, _, err := s.decide(ctx, rel)
	if err != nil {
		return false, err
	}
	s.o.GuardMetrics.observe(rel, d)
	if d.State != guard.Tripped {
		return false, nil
	}
	action := ActPause
	if rel.Guard.Action == guard.Rollback {
		action = ActRollback
	}
	rev := rel.Revision
	_, err = s.apply(audit.WithActor(ctx, GuardActor), rel.Agent, rel.Env, rel.ID, action,
		TransitionInput{ExpectedRevision: &rev, Reason: "guard: " + d.Reason, trip: &trip{decision: d}}, -1, -1)
	var conflict *promptstore.RevisionConflict
	var invalid *InvalidTransition
	switch {
	case errors.As(err, &conflict), errors.As(err, &invalid):
		return false, nil // changed meanwhile: the next run looks again
	case err != nil:
		return false, err
	}
	s.o.GuardMetrics.tripped(rel, action)
	s.log.Warn("release guard tripped", "release", rel.ID, "agent", rel.Agent, "env", rel.Env, "action", string(action), "reason", d.Reason)
	return true, nil
}

// stepHeld reports whether rel's guard holds its next step: with
// gate_steps, while an arm lacks min_samples or once it has tripped.
func (s *Service) stepHeld(ctx context.Context, rel *Release) (bool, error) {
	if rel.Guard == nil || !rel.Guard.GateSteps {
		return false, nil
	}
	if rel.Guard.State == guard.Tripped {
		return true, nil
	}
	d, ok, err := s.decide(ctx, rel)
	if err != nil {
		return true, err
	}
	return !ok || d.State != guard.Watching, nil
}
