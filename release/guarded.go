package release

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/release/guard"
	"github.com/promptd/promptd/sqlstore"
)

// GuardStatus is a release's guard as the API shows it: its configuration
// and where it stands. Only outcomes at or after Since count: the
// creation, or the last resume (resuming after a trip restarts the guard).
type GuardStatus struct {
	guard.Config
	State     guard.State `json:"state"`
	DecidedAt *time.Time  `json:"decided_at,omitempty"`
	Reason    string      `json:"reason,omitempty"`
	Since     time.Time   `json:"since"`
}

// Outcomes is where guards read a release's outcomes.
type Outcomes interface {
	// GuardRows returns release id's outcomes of reason "bucket" with at
	// >= since, summed per percent period, arm and reporting token.
	GuardRows(ctx context.Context, id string, since time.Time) ([]guard.Row, error)
}

// GuardChange sets (Config non-nil) or removes a release's guard.
type GuardChange struct {
	Config *guard.Config
}

// guardRow is the guard's part of a release row. NULL guard: unguarded;
// guard_tripped_at_ms set: tripped (written with the trip's transition).
type guardRow struct {
	Guard            *string
	GuardTrippedAtMs *int64
	GuardReason      *string
	GuardSinceMs     *int64
	// PausedByGuardAtMs is set when a trip paused the release and cleared
	// when it resumes: removing or replacing the guard leaves it, so the
	// resume of a release its guard paused stays gated.
	PausedByGuardAtMs *int64
}

const guardCols = `guard, guard_tripped_at_ms, guard_reason, guard_since_ms, paused_by_guard_at_ms`

// selectCols are the columns a release is read with.
const selectCols = releaseCols + `, ` + guardCols

func (g guardRow) status(createdAtMs int64) *GuardStatus {
	if g.Guard == nil {
		return nil
	}
	st := &GuardStatus{State: guard.Collecting, Since: time.UnixMilli(createdAtMs).UTC()}
	if err := json.Unmarshal([]byte(*g.Guard), &st.Config); err != nil {
		return nil
	}
	if g.GuardSinceMs != nil {
		st.Since = time.UnixMilli(*g.GuardSinceMs).UTC()
	}
	if g.GuardTrippedAtMs != nil {
		t := time.UnixMilli(*g.GuardTrippedAtMs).UTC()
		st.State, st.DecidedAt = guard.Tripped, &t
		if g.GuardReason != nil {
			st.Reason = *g.GuardReason
		}
	}
	return st
}

// addGuardColumns is migration release_guard/1: the guard's columns on the
// releases row, added only when missing (MySQL commits each ALTER at once,
// so a partial run can run again).
func addGuardColumns(tx *gorm.DB) error {
	for _, c := range []string{"guard " + sqlstore.LongText(sqlstore.Dialect(tx)) + " NULL", "guard_tripped_at_ms BIGINT NULL",
		"guard_reason TEXT NULL", "guard_since_ms BIGINT NULL"} {
		if tx.Migrator().HasColumn("releases", strings.Fields(c)[0]) {
			continue
		}
		if err := tx.Exec(`ALTER TABLE releases ADD COLUMN ` + c).Error; err != nil {
			return err
		}
	}
	return nil
}

// addPausedByGuard is migration release_guard/2.
func addPausedByGuard(tx *gorm.DB) error {
	if tx.Migrator().HasColumn("releases", "paused_by_guard_at_ms") {
		return nil
	}
	if err := tx.Exec(`ALTER TABLE releases ADD COLUMN paused_by_guard_at_ms BIGINT NULL`).Error; err != nil {
		return err
	}
	// A release paused by a trip before this column existed still shows it.
	return tx.Exec(`UPDATE releases SET paused_by_guard_at_ms = guard_tripped_at_ms WHERE state = ? AND guard_tripped_at_ms IS NOT NULL`, string(Paused)).Error
}

// writeGuard stores rel's guard configuration (nil: none) within tx.
func writeGuard(tx *gorm.DB, id string, c *guard.Config) error {
	var raw *string
	if c != nil {
		b, _ := json.Marshal(c)
		s := string(b)
		raw = &s
	}
	return tx.Exec(`UPDATE releases SET guard = ? WHERE id = ?`, raw, id).Error
}

// trip is what the evaluator asks of a transition.
type trip struct {
	decision guard.Decision
}

// guardChange writes the guard's part of a transition of rel (already at
// its new revision) within tx: a new or removed guard, a trip with its
// audit event and figures, or the restart of a tripped guard on resume.
func (s *Service) guardChange(ctx context.Context, tx *gorm.DB, rel *Release, action Action, in TransitionInput, now time.Time) error {
	if in.Guard != nil {
		if err := writeGuard(tx, rel.ID, in.Guard.Config); err != nil {
			return err
		}
		rel.Guard = nil
		if c := in.Guard.Config; c != nil {
			rel.Guard = &GuardStatus{Config: *c, State: guard.Collecting, Since: rel.CreatedAt}
		}
	}
	switch {
	case in.trip != nil && rel.Guard != nil:
		ms := now.UnixMilli()
		var pausedAt *int64
		if rel.State == Paused {
			pausedAt = &ms
		}
		if err := tx.Exec(`UPDATE releases SET guard_tripped_at_ms = ?, guard_reason = ?, paused_by_guard_at_ms = ? WHERE id = ?`,
			ms, in.trip.decision.Reason, pausedAt, rel.ID).Error; err != nil {
			return err
		}
		rel.PausedByGuard = pausedAt != nil
		t := time.UnixMilli(ms).UTC()
		rel.Guard.State, rel.Guard.DecidedAt, rel.Guard.Reason = guard.Tripped, &t, in.trip.decision.Reason
		st := in.trip.decision.Stats
		rel.Stats = &st
		return s.audit.Append(ctx, tx, audit.Event{Action: "release.guard_tripped", Agent: rel.Agent, Env: rel.Env,
			Resource: "releases/" + rel.ID}, map[string]any{"release_id": rel.ID, "revision": rel.Revision, "state": rel.State,
			"action": rel.Guard.Action, "metric": rel.Guard.Metric, "max_degradation": rel.Guard.MaxDegradation,
			"confidence": rel.Guard.Confidence, "min_samples": rel.Guard.MinSamples, "reason": in.trip.decision.Reason,
			"baseline": st.Baseline, "candidate": st.Candidate, "difference": st.Difference, "since": rel.Guard.Since})
	case action == ActResume && rel.Guard != nil && rel.Guard.State == guard.Tripped:
		ms := now.UnixMilli()
		if err := tx.Exec(`UPDATE releases SET guard_tripped_at_ms = NULL, guard_reason = NULL, guard_since_ms = ?, paused_by_guard_at_ms = NULL WHERE id = ?`, ms, rel.ID).Error; err != nil {
			return err
		}
		rel.Guard.State, rel.Guard.DecidedAt, rel.Guard.Reason, rel.Guard.Since = guard.Collecting, nil, "", time.UnixMilli(ms).UTC()
		rel.PausedByGuard = false
	case action == ActResume && rel.PausedByGuard: // its guard was removed or replaced since the trip
		if err := tx.Exec(`UPDATE releases SET paused_by_guard_at_ms = NULL WHERE id = ?`, rel.ID).Error; err != nil {
			return err
		}
		rel.PausedByGuard = false
	}
	return nil
}

// defaultStatsConfig describes releases without a guard: the failure
// rate at the default confidence.
var defaultStatsConfig = guard.Config{Metric: guard.FailureRate, MinSamples: guard.DefaultMinSamples, Confidence: guard.DefaultConfidence}

// decide reads rel's outcomes since its guard's start (its creation when
// unguarded) and decides; ok is false without an outcome source.
func (s *Service) decide(ctx context.Context, rel *Release) (d guard.Decision, ok bool, err error) {
	if s.o.Outcomes == nil {
		return guard.Decision{}, false, nil
	}
	c, since := defaultStatsConfig, rel.CreatedAt
	if rel.Guard != nil {
		c, since = rel.Guard.Config, rel.Guard.Since
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.SQLTimeout)
	defer cancel()
	rows, err := s.o.Outcomes.GuardRows(ctx, rel.ID, since)
	if err != nil {
		return guard.Decision{}, false, storeErr(err)
	}
	return guard.Evaluate(c, rows), true, nil
}

// Describe fills in rel's Stats (from its outcomes) and its guard's
// state: collecting or watching as the figures stand now, tripped as the
// evaluator decided. A degradation the evaluator has not acted on yet
// shows as watching: trips are the evaluator's, through a transition.
func (s *Service) Describe(ctx context.Context, rel *Release) error {
	d, ok, err := s.decide(ctx, rel)
	if err != nil || !ok {
		return err
	}
	rel.Stats = &d.Stats
	if rel.Guard != nil && rel.Guard.State != guard.Tripped {
		g := *rel.Guard // never written through: the cache may share it
		g.State = d.State
		if d.State == guard.Tripped {
			g.State = guard.Watching
		}
		rel.Guard = &g
	}
	return nil
}

// CodeInvalidGuard is the code of a guard out of range (422, with the
// field, like "guard.max_degradation").
const CodeInvalidGuard = "invalid_guard"

// ParseGuard validates a guard as received and fills in its defaults.
func ParseGuard(in guard.Input) (*guard.Config, error) {
	c, err := guard.Parse(in)
	if err != nil {
		return nil, guardErr(err)
	}
	return &c, nil
}

func guardErr(err error) error {
	var fe *guard.FieldError
	if errors.As(err, &fe) {
		return invalidf(CodeInvalidGuard, "guard."+fe.Field, "%s", fe.Detail)
	}
	return err
}

// checkGuard validates a guard given in code (nil: none).
func checkGuard(c *guard.Config) error {
	if c == nil {
		return nil
	}
	return guardErr(c.Validate())
}
