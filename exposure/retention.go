package exposure

import (
	"context"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/release"
)

// pruneBatch bounds one DELETE of the prunes, so no statement holds locks
// long (an exposure batch is 6 arguments a row: 3,000 in all).
const pruneBatch = 500

// DefaultRetention is the default of PROMPTD_EXPOSURE_RETENTION and
// PROMPTD_OUTCOME_RETENTION: 90 days.
const DefaultRetention = 2160 * time.Hour

// MinExposureRetention is the shortest exposure retention: a report may
// still add to a minute up to MaxAge old.
const MinExposureRetention = MaxAge

// MinOutcomeRetention is the shortest outcome retention: the outcome ids'
// DedupeWindow.
const MinOutcomeRetention = DedupeWindow

// PruneExposures deletes the exposure rows of minutes before cutoff and
// returns how many: the oldest pruneBatch rows at a time (along the
// minute index), each batch deleted by one statement in its own
// transaction. It stops early, with what it deleted so far, when ctx
// ends; the next run continues. Run it periodically on one instance (cmd
// takes a job lease for it).
func (s *Service) PruneExposures(ctx context.Context, cutoff time.Time) (int64, error) {
	db := s.o.DB.WithContext(ctx)
	var total int64
	for {
		var keys []Key
		if err := db.Raw(`SELECT agent, env, minute_ms, release_id, version, arm FROM exposures WHERE minute_ms < ?
			ORDER BY minute_ms LIMIT ?`, cutoff.UnixMilli(), pruneBatch).Scan(&keys).Error; err != nil || len(keys) == 0 {
			return total, promptstore.StoreErr(err)
		}
		args := make([]any, 0, 6*len(keys))
		for _, k := range keys {
			args = append(args, k.Agent, k.Env, k.MinuteMs, k.ReleaseID, k.Version, k.Arm)
		}
		cond := strings.Repeat(`(agent = ? AND env = ? AND minute_ms = ? AND release_id = ? AND version = ? AND arm = ?) OR `, len(keys))
		res := db.Exec(`DELETE FROM exposures WHERE `+strings.TrimSuffix(cond, " OR "), args...)
		if res.Error != nil {
			return total, promptstore.StoreErr(res.Error)
		}
		total += res.RowsAffected
		if len(keys) < pruneBatch {
			return total, nil
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
}

// PruneOutcomes deletes the outcomes of releases that ended (promoted or
// rolled back) before cutoff, their last change being before it, and
// returns how many, pruneBatch rows a statement. Outcomes of a running or
// paused release are never deleted, however old: its guard reads them
// from the guard's start. Like PruneExposures it stops early when ctx
// ends and the next run continues.
func (s *Service) PruneOutcomes(ctx context.Context, cutoff time.Time) (int64, error) {
	db := s.o.DB.WithContext(ctx)
	var total int64
	for {
		var ids []string
		if err := db.Raw(`SELECT r.id FROM releases r WHERE r.state IN (?, ?) AND r.updated_at_ms < ?
			AND EXISTS (SELECT 1 FROM release_outcomes o WHERE o.release_id = r.id) ORDER BY r.id LIMIT 100`,
			string(release.Promoted), string(release.RolledBack), cutoff.UnixMilli()).Scan(&ids).Error; err != nil || len(ids) == 0 {
			return total, promptstore.StoreErr(err)
		}
		for _, id := range ids {
			n, err := s.pruneRelease(ctx, db, id)
			total += n
			if err != nil {
				return total, err
			}
		}
	}
}

// pruneRelease deletes every outcome of release id, pruneBatch at a time.
func (s *Service) pruneRelease(ctx context.Context, db *gorm.DB, id string) (int64, error) {
	var total int64
	for {
		var rows []int64
		if err := db.Raw(`SELECT id FROM release_outcomes WHERE release_id = ? ORDER BY id LIMIT ?`, id, pruneBatch).
			Scan(&rows).Error; err != nil || len(rows) == 0 {
			return total, promptstore.StoreErr(err)
		}
		res := db.Exec(`DELETE FROM release_outcomes WHERE id IN ?`, rows)
		if res.Error != nil {
			return total, promptstore.StoreErr(res.Error)
		}
		total += res.RowsAffected
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
}
