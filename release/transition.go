package release

import (
	"context"
	"encoding/json"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/sqlstore"
)

// TransitionInput carries the optional condition and reason of a request.
type TransitionInput struct {
	ExpectedRevision *int64 // the release's
	Percent          string // for ActPercent
	Reason           string
	// Overrides replace the release's override lists (ActOverrides, or
	// with ActPercent); nil leaves them.
	Overrides *OverridesInput
	// Guard sets or removes the guard (ActGuard, or with ActPercent or
	// ActOverrides); nil leaves it.
	Guard *GuardChange
	// Gate, when set, decides inside the transition's transaction, with
	// the release as read under lock (before the change), whether the
	// transition may go ahead: an error rolls it back. A no-op transition
	// does not ask.
	Gate func(tx *gorm.DB, rel *Release) error

	trip *trip // the guard evaluator's trip
}

// Transition applies action to the release through the transition table,
// in one transaction: the release row's revision condition, its history
// row, the pointer row when the release ends (promote: pointer to the
// candidate; rollback: the candidate revoked), and the audit event. A
// request for the state the release is in returns it unchanged.
func (s *Service) Transition(ctx context.Context, id string, action Action, in TransitionInput, then ...sqlstore.Then[*Release]) (*Release, error) {
	if action == ActStep {
		return nil, invalidf(CodeInvalidField, "action", "steps are applied by the scheduler")
	}
	if in.Guard != nil && action != ActGuard && action != ActPercent && action != ActOverrides || in.Guard == nil && action == ActGuard {
		return nil, invalidf(CodeInvalidField, "guard", "a guard is changed by PATCH")
	}
	if in.Guard != nil {
		if err := checkGuard(in.Guard.Config); err != nil {
			return nil, err
		}
	}
	if len(in.Reason) > promptstore.MaxReason {
		return nil, invalidf(CodeInvalidField, "reason", "reason is too long")
	}
	bp := -1
	if action == ActPercent {
		var ok bool
		if bp, ok = ParsePercent(in.Percent); !ok {
			return nil, invalidf(CodeInvalidPercent, "percent", "percent must be a number 0..100 with at most 2 decimals")
		}
	}
	if action == ActOverrides && in.Overrides == nil {
		return nil, invalidf(CodeInvalidField, "overrides", "overrides are required")
	}
	if in.Overrides != nil {
		if action != ActPercent && action != ActOverrides {
			return nil, invalidf(CodeInvalidField, "overrides", "overrides change with a percent or on their own")
		}
		if _, err := hashOverrides(id, in.Overrides); err != nil {
			return nil, err
		}
	}
	rel, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.apply(ctx, rel.Agent, rel.Env, id, action, in, bp, -1, then...)
}

// apply runs one transition under the env lock. step >= 0 names the
// scheduled step being applied (the scheduler's exactly-once check).
func (s *Service) apply(ctx context.Context, agent, env, id string, action Action, in TransitionInput, bp, step int, then ...sqlstore.Then[*Release]) (*Release, error) {
	defer s.lock(ctx, agent, env)()
	ctx, cancel := context.WithTimeout(ctx, s.o.SQLTimeout)
	defer cancel()
	var ptr *promptstore.PointerState
	changed := false
	rel, err := sqlstore.Transact(ctx, s.db, func(tx *gorm.DB) (*Release, error) {
		rel, err := readRelease(tx, id, true)
		if err != nil {
			return nil, err
		}
		if step >= 0 && (rel.StepsApplied != step || rel.State != Running) {
			return nil, errStepGone // applied by another instance, or cancelled
		}
		to, noop, ok := Next(rel.State, action)
		if !ok {
			return nil, &InvalidTransition{State: rel.State, Action: action}
		}
		if noop {
			return rel, complete(tx, rel)
		}
		if in.ExpectedRevision != nil && *in.ExpectedRevision != rel.Revision {
			return nil, &promptstore.RevisionConflict{Expected: *in.ExpectedRevision, Current: rel.Revision}
		}
		if in.Gate != nil {
			if err := in.Gate(tx, rel); err != nil {
				return nil, err
			}
		}
		ptr, err = s.change(ctx, tx, rel, action, to, in, bp, step >= 0)
		if err != nil {
			return nil, err
		}
		changed = true
		return rel, complete(tx, rel)
	}, then...)
	if err != nil {
		return nil, storeErr(err)
	}
	if changed {
		s.announce(ctx, rel, ptr)
	}
	return rel, nil
}

// change writes one transition of rel (read under lock in tx) to state to.
// isStep marks a scheduled step (ActStep, or ActPromote for a promote step).
func (s *Service) change(ctx context.Context, tx *gorm.DB, rel *Release, action Action, to State, in TransitionInput, bp int, isStep bool) (*promptstore.PointerState, error) {
	now := s.o.Now()
	from := rel.State
	nextAt, pausedLeft := rel.NextStepAt, rel.pausedLeft
	applied := rel.StepsApplied
	event := map[Action]string{ActPause: "release.paused", ActResume: "release.resumed", ActPromote: "release.promoted",
		ActRollback: "release.rolled_back", ActPercent: "release.percent_changed", ActStep: "release.step_applied",
		ActOverrides: "release.percent_changed", ActGuard: "release.guard_changed"}[action]
	details := map[string]any{"from": from}
	switch action {
	case ActPercent: // a manual percent cancels the remaining steps
		details["old_percent"], details["percent"] = rel.Percent, FormatPercent(bp)
		applied, nextAt, pausedLeft = len(rel.steps), nil, 0
	case ActOverrides: // who is in which arm changes; the percent and the steps stay
		details["old_percent"], details["percent"] = rel.Percent, rel.Percent
	case ActStep:
		st := rel.steps[applied]
		details["step"], details["percent"] = applied, FormatPercent(st.bp)
		bp = st.bp
		applied++
		nextAt = nil
		if applied < len(rel.steps) {
			t := now.Add(rel.steps[applied].after)
			nextAt = &t
		}
	case ActPause:
		if nextAt != nil {
			pausedLeft, nextAt = max(nextAt.Sub(now), 0), nil
		}
	case ActResume:
		if applied < len(rel.steps) {
			t := now.Add(pausedLeft)
			nextAt, pausedLeft = &t, 0
		}
	case ActPromote, ActRollback:
		nextAt, pausedLeft = nil, 0
		if isStep { // the last step promotes
			details["step"], details["promote"] = applied, true
			applied++
			event = "release.step_applied"
		}
	}
	if bp < 0 {
		bp = rel.BasisPoints
	}
	var nextMs, leftMs *int64
	if nextAt != nil {
		v := nextAt.UnixMilli()
		nextMs = &v
	}
	if pausedLeft > 0 {
		v := pausedLeft.Milliseconds()
		leftMs = &v
	}
	res := tx.Exec(`UPDATE releases SET state = ?, basis_points = ?, steps_applied = ?, next_step_at_ms = ?, paused_left_ms = ?,
		revision = revision + 1, updated_at_ms = ? WHERE id = ? AND revision = ?`,
		string(to), bp, applied, nextMs, leftMs, now.UnixMilli(), rel.ID, rel.Revision)
	if res.Error != nil {
		return nil, res.Error
	}
	if res.RowsAffected != 1 {
		return nil, &promptstore.RevisionConflict{Expected: rel.Revision, Current: rel.Revision + 1}
	}
	rel.State, rel.BasisPoints, rel.Percent, rel.StepsApplied = to, bp, json.Number(FormatPercent(bp)), applied
	rel.NextStepAt, rel.pausedLeft, rel.Revision, rel.UpdatedAt = nextAt, pausedLeft, rel.Revision+1, now.UTC()
	if in.Guard != nil {
		details["guard"] = in.Guard.Config
	}
	if in.Overrides != nil {
		o, err := hashOverrides(rel.ID, in.Overrides)
		if err != nil {
			return nil, err
		}
		if err := writeOverrides(tx, rel.ID, o); err != nil {
			return nil, err
		}
		details["overrides"] = overrideCounts(o) // counts only: events never carry override ids
	}
	if err := s.record(ctx, tx, rel, string(action), from, to, bp, in.Reason, event, details); err != nil {
		return nil, err
	}
	if err := s.guardChange(ctx, tx, rel, action, in, now); err != nil {
		return nil, err
	}
	if isStep && to == Promoted {
		if err := s.audit.Append(ctx, tx, audit.Event{Action: "release.promoted", Agent: rel.Agent, Env: rel.Env,
			Resource: "releases/" + rel.ID}, map[string]any{"release_id": rel.ID, "revision": rel.Revision, "by_step": true}); err != nil {
			return nil, err
		}
	}
	if to.Active() {
		return nil, nil
	}
	// The release ends: the pointer row stops naming it.
	cur, err := s.store.InTx(tx).Read(rel.Agent, rel.Env)
	if err != nil {
		return nil, err
	}
	if cur == nil {
		return nil, promptstore.ErrNoPointer
	}
	c := promptstore.PointerChange{Agent: rel.Agent, Env: rel.Env, ExpectedRevision: cur.Revision, ExpectRelease: rel.ID, Reason: in.Reason}
	if to == Promoted {
		c.MoveTo, c.Action = rel.CandidateVersion, "promote"
	} else {
		c.Revoke = rel.CandidateVersion
		if c.Reason == "" {
			c.Reason = "release " + rel.ID + " rolled back"
		}
	}
	return s.store.InTx(tx).Change(ctx, c)
}

type stepGone struct{}

func (stepGone) Error() string { return "release: step already applied or cancelled" }

var errStepGone error = stepGone{}
