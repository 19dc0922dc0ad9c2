package release

import (
	"context"
	"errors"

	"github.com/promptd/promptd/locks"
)

// StepsJob names the cluster-singleton job that applies due steps: its
// lock key is locks.Keys.Job(StepsJob).
const StepsJob = "release-steps"

// stepsLeaseTTL is how long a replica that died mid-run keeps the others
// from the job (locks.RunExclusive caps it at locks.MaxRunTTL); a live one
// keeps its lease alive.
const stepsLeaseTTL = locks.MaxRunTTL

// RunDueSteps applies every scheduled step that is due. It is a
// cluster-singleton job (locks.RunExclusive on the StepsJob key): when
// another replica holds the job's lease it returns at once, and the run
// stops when ctx ends or the lease is lost. Each step is applied with the
// release row's revision and step-index conditions, so a step is applied
// exactly once even if two replicas race; that is also why the job runs
// without its lease when the lock store is unavailable.
func (s *Service) RunDueSteps(ctx context.Context) (applied int, err error) {
	key, err := s.o.Keys.Job(StepsJob)
	if err != nil {
		return 0, err
	}
	_, err = locks.RunExclusive(ctx, s.o.Locker, key, stepsLeaseTTL, func(ctx context.Context) (err error) {
		applied, err = s.runDueSteps(ctx)
		return err
	}, locks.RunUnlockedIfUnavailable())
	return applied, err
}

// runDueSteps is one run of the steps job.
func (s *Service) runDueSteps(ctx context.Context) (applied int, err error) {
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
		if held, err := s.stepHeld(ctx, rel); held {
			if err != nil {
				s.log.Warn("release step held: guard not evaluated", "release", d.ID, "err", err)
			}
			continue // gate_steps: the step waits for both arms' samples and an untripped guard
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
