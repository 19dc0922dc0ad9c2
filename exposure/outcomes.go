package exposure

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/ident"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/sqlstore"
)

// DedupeWindow is how long an outcome_id is remembered per (agent, env,
// release_id).
const DedupeWindow = 7 * 24 * time.Hour

// Outcome reasons.
const (
	ReasonBucket   = "bucket"
	ReasonOverride = "override"
	ReasonPinned   = "pinned"
)

// Outcome is one report of how a served answer went.
type Outcome struct {
	OutcomeID  string // optional identifier; dedupes
	Agent, Env string
	ReleaseID  string
	Arm        string
	Version    int
	Reason     string
	Success    bool
	Score      *float64 // 0..1
	LatencyMs  *int64
	At         time.Time
}

// OutcomeResult is the answer to an outcome report.
type OutcomeResult struct {
	Accepted   int `json:"accepted"`
	Duplicates int `json:"duplicates"`
}

// outcomeRow is an outcome checked against its release, ready to store.
type outcomeRow struct {
	Outcome
	period, periodBP int
}

// RecordOutcomes checks every outcome (all or nothing: the first bad one
// names its field, items[i].x): its release belongs to its agent and env,
// its arm and version are the release's, its at falls while the release
// ran (from creation to its end, or now, with ClockSkew either side). It
// stores the new ones in one transaction; an outcome_id seen before for
// the same (agent, env, release_id) is counted as a duplicate and not
// stored again.
func (s *Service) RecordOutcomes(ctx context.Context, items []Outcome, then ...sqlstore.Then[OutcomeResult]) (OutcomeResult, error) {
	if len(items) == 0 || len(items) > MaxItems {
		return OutcomeResult{}, invalid("items", "1..%d items", MaxItems)
	}
	if s.o.Releases == nil {
		return OutcomeResult{}, errors.New("exposure: outcomes need Options.Releases")
	}
	now := s.o.Now()
	rels := map[string]*release.Release{}
	rows := make([]outcomeRow, len(items))
	for i, it := range items {
		p := fmt.Sprintf("items[%d].", i)
		if err := checkIDs(p, it.Agent, it.Env); err != nil {
			return OutcomeResult{}, err
		}
		if it.OutcomeID != "" {
			if err := ident.Validate(p+"outcome_id", it.OutcomeID); err != nil {
				return OutcomeResult{}, err
			}
		}
		if err := checkArm(p, it.ReleaseID, it.Arm, true); err != nil {
			return OutcomeResult{}, err
		}
		switch {
		case it.Reason != ReasonBucket && it.Reason != ReasonOverride && it.Reason != ReasonPinned:
			return OutcomeResult{}, invalid(p+"reason", `reason must be "bucket", "override" or "pinned"`)
		case it.Score != nil && (*it.Score < 0 || *it.Score > 1):
			return OutcomeResult{}, invalid(p+"score", "score must be 0..1")
		case it.LatencyMs != nil && (*it.LatencyMs < 0 || *it.LatencyMs > 24*3600*1000):
			return OutcomeResult{}, invalid(p+"latency_ms", "latency_ms must be 0..86400000")
		}
		rel, ok := rels[it.ReleaseID]
		if !ok {
			var err error
			if rel, err = s.o.Releases.Get(ctx, it.ReleaseID); err != nil && !errors.Is(err, release.ErrNotFound) {
				return OutcomeResult{}, err
			}
			rels[it.ReleaseID] = rel
		}
		if rel == nil || rel.Agent != it.Agent || rel.Env != it.Env {
			return OutcomeResult{}, invalid(p+"release_id", "no release %s of this agent and env", it.ReleaseID)
		}
		if want := armVersion(rel, it.Arm); it.Version != want {
			return OutcomeResult{}, invalid(p+"version", "the release's %s is version %d", it.Arm, want)
		}
		from, to := rel.CreatedAt.Add(-s.o.ClockSkew), endOf(rel, now).Add(s.o.ClockSkew)
		if it.At.Before(from) || it.At.After(to) {
			return OutcomeResult{}, invalid(p+"at", "at must fall while the release ran (%s .. %s)",
				from.Format(time.RFC3339), to.Format(time.RFC3339))
		}
		period, bp := periodAt(rel, it.At)
		rows[i] = outcomeRow{Outcome: it, period: period, periodBP: bp}
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.SQLTimeout)
	defer cancel()
	token := audit.Actor(ctx)
	var (
		res OutcomeResult
		err error
	)
	for attempt := 0; attempt < 3; attempt++ { // a concurrent report took an outcome_id first: look again
		res, err = sqlstore.Transact(ctx, s.o.DB, func(tx *gorm.DB) (OutcomeResult, error) {
			return insertOutcomes(tx, rows, token, now)
		}, then...)
		if err == nil || !(errors.Is(err, sqlstore.ErrDuplicate) || errors.Is(err, sqlstore.ErrUnavailable)) || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 20 * time.Millisecond)
	}
	return res, promptstore.StoreErr(err)
}

func armVersion(rel *release.Release, arm string) int {
	if arm == release.ArmCandidate {
		return rel.CandidateVersion
	}
	return rel.BaselineVersion
}

// endOf is when rel stopped running: its promote or rollback, or now.
func endOf(rel *release.Release, now time.Time) time.Time {
	if rel.State.Active() {
		return now
	}
	for i := len(rel.History) - 1; i >= 0; i-- {
		if to := rel.History[i].To; to == release.Promoted || to == release.RolledBack {
			return rel.History[i].At
		}
	}
	return rel.UpdatedAt
}

// periodAt is how many percent changes rel had at or before at, and the
// basis points in force then. The history holds every percent a release
// had (create, PATCH, steps), so the periods follow from it alone.
func periodAt(rel *release.Release, at time.Time) (period, bp int) {
	bp = -1
	for _, h := range rel.History {
		if h.At.After(at) {
			break
		}
		b, ok := release.ParsePercent(h.Percent.String())
		if !ok {
			continue
		}
		if bp >= 0 && b != bp {
			period++
		}
		bp = b
	}
	if bp < 0 { // before its first history row (clock skew): its first percent
		if len(rel.History) > 0 {
			bp, _ = release.ParsePercent(rel.History[0].Percent.String())
		} else {
			bp = rel.BasisPoints
		}
	}
	return period, bp
}

// insertOutcomes stores the rows whose outcome_id is new, in one
// statement per 500 rows.
func insertOutcomes(tx *gorm.DB, rows []outcomeRow, token string, now time.Time) (OutcomeResult, error) {
	type scope struct{ agent, env, release string }
	ids := map[scope][]string{}
	for _, r := range rows {
		if r.OutcomeID != "" {
			k := scope{r.Agent, r.Env, r.ReleaseID}
			ids[k] = append(ids[k], r.OutcomeID)
		}
	}
	seen := map[scope]map[string]bool{}
	for k, list := range ids {
		var have []string
		if err := tx.Raw(`SELECT outcome_id FROM release_outcomes WHERE agent = ? AND env = ? AND release_id = ? AND outcome_id IN ?`,
			k.agent, k.env, k.release, list).Scan(&have).Error; err != nil {
			return OutcomeResult{}, err
		}
		seen[k] = map[string]bool{}
		for _, id := range have {
			seen[k][id] = true
		}
	}
	var (
		res  OutcomeResult
		args []any
		n    int
	)
	flush := func() error {
		if n == 0 {
			return nil
		}
		values := strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?), ", n)
		err := tx.Exec(`INSERT INTO release_outcomes (agent, env, release_id, arm, version, reason, period, period_bp, success,
			score, latency_ms, at_ms, outcome_id, token, created_at_ms) VALUES `+values[:len(values)-2], args...).Error
		args, n = args[:0], 0
		return err
	}
	for _, r := range rows {
		var oid any
		if r.OutcomeID != "" {
			k := scope{r.Agent, r.Env, r.ReleaseID}
			if seen[k][r.OutcomeID] {
				res.Duplicates++
				continue
			}
			seen[k][r.OutcomeID] = true
			oid = r.OutcomeID
		}
		success := 0
		if r.Success {
			success = 1
		}
		args = append(args, r.Agent, r.Env, r.ReleaseID, r.Arm, r.Version, r.Reason, r.period, r.periodBP, success,
			r.Score, r.LatencyMs, r.At.UnixMilli(), oid, token, now.UnixMilli())
		res.Accepted++
		if n++; n == 500 {
			if err := flush(); err != nil {
				return OutcomeResult{}, err
			}
		}
	}
	return res, flush()
}

// Sweep forgets outcome ids older than DedupeWindow (the rows stay, for
// the guard), at most batch rows a call; it returns how many.
func (s *Service) Sweep(ctx context.Context, batch int) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.o.SQLTimeout)
	defer cancel()
	cut := s.o.Now().Add(-DedupeWindow).UnixMilli()
	db := s.o.DB.WithContext(ctx)
	var ids []int64
	if err := db.Raw(`SELECT id FROM release_outcomes WHERE created_at_ms < ? AND outcome_id IS NOT NULL ORDER BY created_at_ms LIMIT ?`,
		cut, batch).Scan(&ids).Error; err != nil || len(ids) == 0 {
		return 0, promptstore.StoreErr(err)
	}
	res := db.Exec(`UPDATE release_outcomes SET outcome_id = NULL WHERE id IN ?`, ids)
	return res.RowsAffected, promptstore.StoreErr(res.Error)
}
