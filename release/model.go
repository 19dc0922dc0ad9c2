package release

import (
	"encoding/json"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/prompt"
	"github.com/promptd/promptd/release/guard"
	"github.com/promptd/promptd/sqlstore"
)

// Stickiness says which caller key is bucketed.
const (
	StickyUser    = "user"
	StickySession = "session"
)

// Release is a grayscale release as the API shows it.
type Release struct {
	ID               string       `json:"id"`
	Agent            string       `json:"agent"`
	Env              string       `json:"env"`
	State            State        `json:"state"`
	BaselineVersion  int          `json:"baseline_version"`
	CandidateVersion int          `json:"candidate_version"`
	Percent          json.Number  `json:"percent"`
	Stickiness       string       `json:"stickiness"`
	Steps            []Step       `json:"steps"`
	StepsApplied     int          `json:"steps_applied"`
	NextStepAt       *time.Time   `json:"next_step_at"`
	Revision         int64        `json:"revision"`
	Message          string       `json:"message"`
	CreatedBy        string       `json:"created_by"`
	CreatedAt        time.Time    `json:"created_at"`
	UpdatedAt        time.Time    `json:"updated_at"`
	History          []Transition `json:"history"`
	BasisPoints      int          `json:"-"`
	// Overrides are the hashed keys forced onto each arm (see Overrides).
	Overrides Overrides    `json:"overrides"`
	Guard     *GuardStatus `json:"guard"` // nil: unguarded
	// PausedByGuard: a guard's trip paused the release and it has not
	// resumed since, whatever became of the guard; its resume is gated.
	PausedByGuard bool              `json:"paused_by_guard"`
	Stats         *guard.Stats      `json:"stats"` // set by Describe
	forced        *prompt.Overrides // the override sets, for prompt.Decide
	pausedLeft    time.Duration     // the rest of the current step's wait, while paused
	steps         []step
}

// Transition is one entry of a release's history.
type Transition struct {
	Revision int64       `json:"revision"`
	Action   string      `json:"action"`
	From     State       `json:"from"`
	To       State       `json:"to"`
	Percent  json.Number `json:"percent"`
	Actor    string      `json:"actor"`
	Reason   string      `json:"reason,omitempty"`
	At       time.Time   `json:"at"`
}

type releaseRow struct {
	ID               string
	Agent            string
	Env              string
	State            string
	BaselineVersion  int
	CandidateVersion int
	BasisPoints      int
	Stickiness       string
	Steps            string
	StepsApplied     int
	NextStepAtMs     *int64
	PausedLeftMs     *int64
	Revision         int64
	Message          string
	CreatedBy        string
	CreatedAtMs      int64
	UpdatedAtMs      int64
	GuardCols        guardRow `gorm:"embedded"`
}

const releaseCols = `id, agent, env, state, baseline_version, candidate_version, basis_points, stickiness, steps,
	steps_applied, next_step_at_ms, paused_left_ms, revision, message, created_by, created_at_ms, updated_at_ms`

func (r *releaseRow) release() *Release {
	rel := &Release{ID: r.ID, Agent: r.Agent, Env: r.Env, State: State(r.State), BaselineVersion: r.BaselineVersion,
		CandidateVersion: r.CandidateVersion, BasisPoints: r.BasisPoints, Percent: json.Number(FormatPercent(r.BasisPoints)),
		Stickiness: r.Stickiness, StepsApplied: r.StepsApplied, Revision: r.Revision, Message: r.Message,
		CreatedBy: r.CreatedBy, CreatedAt: time.UnixMilli(r.CreatedAtMs).UTC(), UpdatedAt: time.UnixMilli(r.UpdatedAtMs).UTC(),
		steps: decodeSteps(r.Steps), History: []Transition{}, Overrides: Overrides{Candidate: []string{}, Baseline: []string{}},
		Guard: r.GuardCols.status(r.CreatedAtMs), PausedByGuard: r.GuardCols.PausedByGuardAtMs != nil}
	rel.Steps = make([]Step, len(rel.steps))
	for i, s := range rel.steps {
		rel.Steps[i] = s.api()
	}
	if r.NextStepAtMs != nil {
		t := time.UnixMilli(*r.NextStepAtMs).UTC()
		rel.NextStepAt = &t
	}
	if r.PausedLeftMs != nil {
		rel.pausedLeft = time.Duration(*r.PausedLeftMs) * time.Millisecond
	}
	return rel
}

// readRelease reads one release row within tx (FOR UPDATE with lock).
func readRelease(tx *gorm.DB, id string, lock bool) (*Release, error) {
	q := `SELECT ` + selectCols + ` FROM releases WHERE id = ?`
	if lock {
		q += sqlstore.ForUpdate(tx)
	}
	var rows []releaseRow
	if err := tx.Raw(q, id).Scan(&rows).Error; err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, ErrNotFound
	}
	return rows[0].release(), nil
}

func readHistory(tx *gorm.DB, rel *Release) error {
	var rows []struct {
		Revision      int64
		Action        string
		FromState     string
		ToState       string
		BasisPoints   int
		Actor, Reason string
		AtMs          int64
	}
	if err := tx.Raw(`SELECT revision, action, from_state, to_state, basis_points, actor, reason, at_ms
		FROM release_history WHERE release_id = ? ORDER BY revision`, rel.ID).Scan(&rows).Error; err != nil {
		return err
	}
	rel.History = make([]Transition, len(rows))
	for i, r := range rows {
		rel.History[i] = Transition{Revision: r.Revision, Action: r.Action, From: State(r.FromState), To: State(r.ToState),
			Percent: json.Number(FormatPercent(r.BasisPoints)), Actor: r.Actor, Reason: r.Reason, At: time.UnixMilli(r.AtMs).UTC()}
	}
	return nil
}
