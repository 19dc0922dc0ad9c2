package release

import (
	"context"
	"errors"
	"time"

	"github.com/promptd/promptd/locks"
)

// RunDueSteps applies every scheduled step that is due. It is a
// cluster-singleton job: it takes a lease on the job key for the run (and
// returns at once if another replica holds it), and each step is applied
// with the release row's revision and step-index conditions, so a step is
// applied exactly once even if two replicas race.
func (s *Service) RunDueSteps(ctx context.Context) (applied int, err error) {
	key, _ := s.o.Keys.Job("release-steps")
	lease, err := s.o.Locker.Acquire(ctx, key, 30*time.Second)
	switch {
	case errors.Is(err, locks.ErrHeld):
		return 0, nil
	case errors.Is(err, locks.ErrUnavailable):
		// Without Redis the revision conditions alone keep steps single.
	case err != nil:
		return 0, err
	default:
		defer lease.Release(context.WithoutCancel(ctx))
		ctx = lease.Context()
	}
	sctx, cancel := context.WithTimeout(ctx, s.o.SQLTimeout)
	var due []struct {
		ID, Agent, Env string
		StepsApplied   int
	}
	err = s.db.WithContext(sctx).Raw(`SELECT id, agent, env, steps_applied FROM releases
		WHERE state = ? AND next_step_at_ms IS NOT NULL AND next_step_at_ms <= ? ORDER BY next_step_at_ms LIMIT 100`,
		string(Running), s.o.Now().UnixMilli()).Scan(&due).Error
	cancel()
	if err != nil {
		return 0, storeErr(err)
	}
	for _, d := range due {
		rel, err := s.Get(ctx, d.ID)
		if err != nil {
			return applied, err
		}
		if rel.StepsApplied != d.StepsApplied || rel.StepsApplied >= len(rel.steps) {
			continue
		}
		action := ActStep
		if rel.steps[rel.StepsApplied].promote {
			action = ActPromote
		}
		_, err = s.apply(ctx, d.Agent, d.Env, d.ID, action, TransitionInput{Reason: "scheduled step"}, -1, d.StepsApplied)
		switch {
		case errors.Is(err, errStepGone):
		case err != nil:
			s.log.Warn("release step not applied", "release", d.ID, "err", err)
		default:
			applied++
		}
	}
	return applied, nil
}
