package board

import (
	"context"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/sqlstore"
)

// SweepJob names the cluster-singleton reclaim sweeper: its lock key is
// locks.Keys.Job(SweepJob).
const SweepJob = "board-reclaim"

// sweepLeaseTTL is how long a replica that died mid-run keeps the others
// from the job (locks.RunExclusive caps it at locks.MaxRunTTL); a live one
// keeps its lease alive.
const sweepLeaseTTL = locks.MaxRunTTL

// cleanupEvery spaces the retention deletes of a sweeper.
const cleanupEvery = time.Minute

// sweepBatch bounds the records one pass looks at.
const sweepBatch = 500

// SweepResult counts what a sweep did.
type SweepResult struct {
	Reclaimed, Exhausted, Deleted int
	// Expired counts the boards deleted for being empty past
	// Options.IdleRetention.
	Expired int
}

// Sweep runs the reclaim sweeper for d, a pass every `every`, as a
// cluster singleton (locks.RunExclusive on the SweepJob key): a replica
// that finds the lease held returns at once. Each pass returns expired
// claims to the claim's reclaim_to state (or, past max_attempts, to its
// exhausted state), each under the record's revision, its fence and
// claim_expires_at <= now by the SQL clock in the UPDATE's condition, so
// of a last-moment completion and the sweeper exactly one wins. About
// once a minute it also deletes terminal records past the retention,
// dedupe keys past their TTL, old quota windows and the boards without
// records whose definition is older than the idle retention. Without the lock
// store the sweep runs anyway: its conditions alone keep it correct.
func (s *Service) Sweep(ctx context.Context, d, every time.Duration) (SweepResult, error) {
	var total SweepResult
	key, err := s.o.Keys.Job(SweepJob)
	if err != nil {
		return total, err
	}
	_, err = locks.RunExclusive(ctx, s.o.Locker, key, sweepLeaseTTL, func(ctx context.Context) error {
		end := time.Now().Add(d)
		for {
			r, err := s.sweepOnce(ctx)
			total.Reclaimed, total.Exhausted, total.Deleted = total.Reclaimed+r.Reclaimed, total.Exhausted+r.Exhausted, total.Deleted+r.Deleted
			total.Expired += r.Expired
			if err != nil || time.Now().Add(every).After(end) {
				return err
			}
			select {
			case <-time.After(every):
			case <-ctx.Done():
				return nil
			}
		}
	}, locks.RunUnlockedIfUnavailable())
	return total, err
}

// sweepOnce is one pass.
func (s *Service) sweepOnce(ctx context.Context) (SweepResult, error) {
	var res SweepResult
	sctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	db := s.db.WithContext(sctx)
	now, err := s.sqlNow(db)
	if err != nil {
		return res, storeErr(err)
	}
	var expired []recordRow
	if err := db.Raw(`SELECT `+recordCols+` FROM board_records WHERE claim_expires_at_ms <= ? AND owner <> '' ORDER BY claim_expires_at_ms LIMIT ?`,
		now, sweepBatch).Scan(&expired).Error; err != nil {
		return res, storeErr(err)
	}
	defs := map[string]*Definition{}
	woken := map[string]int64{}
	for i := range expired {
		r := &expired[i]
		def, ok := defs[r.Board]
		if !ok {
			b, err := s.readBoard(db, r.Board, false)
			if err != nil {
				return res, storeErr(err)
			}
			if def, err = parseDefinition(b.Definition); err != nil {
				return res, err
			}
			defs[r.Board] = def
		}
		next, err := sqlstore.Transact(sctx, s.db, func(tx *gorm.DB) (*recordRow, error) { return s.reclaim(sctx, tx, def, r) })
		if err != nil {
			return res, storeErr(err)
		}
		if next == nil {
			continue // completed, heartbeated or claimed meanwhile
		}
		if next.State == def.Claim.Exhausted && def.Claim.Exhausted != def.Claim.ReclaimTo {
			res.Exhausted++
		} else {
			res.Reclaimed++
			woken[r.Board] = next.Revision
		}
		s.m.reclaimed(r.Board, 1)
	}
	for board, rev := range woken {
		s.publish(ctx, board, rev)
	}
	s.mu.Lock()
	due := time.Since(s.cleaned) >= cleanupEvery
	if due {
		s.cleaned = time.Now()
	}
	s.mu.Unlock()
	if due {
		n, err := s.cleanup(sctx, now)
		res.Deleted += n
		if err != nil {
			return res, storeErr(err)
		}
		n, err = s.expireIdle(sctx, now-s.o.IdleRetention.Milliseconds())
		res.Expired += n
		if err != nil {
			return res, storeErr(err)
		}
	}
	return res, nil
}

// reclaim takes back one expired claim: nil when the record changed since
// it was read (its revision or fence moved, or the claim was extended).
func (s *Service) reclaim(ctx context.Context, tx *gorm.DB, def *Definition, r *recordRow) (*recordRow, error) {
	next := *r
	next.Revision++
	next.Owner, next.ClaimExpiresAtMs, next.Fence = "", nil, r.Fence+1
	next.State = def.Claim.ReclaimTo
	if r.Attempts >= def.Claim.MaxAttempts {
		next.State = def.Claim.Exhausted
	}
	next.OpenRec = 1
	if def.IsTerminal(next.State) {
		next.OpenRec = 0
	}
	now, nargs := s.nowExpr(tx)
	args := append([]any{next.Revision, next.State, next.Fence, next.OpenRec}, nargs...)
	args = append(args, r.Board, r.ID, r.Revision, r.Fence)
	args = append(args, nargs...)
	res := tx.Exec(`UPDATE board_records SET revision = ?, state = ?, owner = '', fence = ?, claim_expires_at_ms = NULL, open_rec = ?,
		updated_at_ms = `+now+` WHERE board = ? AND id = ? AND revision = ? AND fence = ? AND owner <> '' AND claim_expires_at_ms <= `+now, args...)
	if res.Error != nil || res.RowsAffected != 1 {
		return nil, res.Error
	}
	return &next, s.appendEvent(ctx, tx, "board.record_reclaimed", &next)
}

// cleanup deletes terminal records past the retention, dedupe keys past
// their TTL and quota windows older than two minutes, in bounded batches.
func (s *Service) cleanup(ctx context.Context, now int64) (int, error) {
	db := s.db.WithContext(ctx)
	var old []struct{ Board, ID string }
	if err := db.Raw(`SELECT board, id FROM board_records WHERE open_rec = 0 AND updated_at_ms < ? LIMIT 1000`,
		now-s.o.Retention.Milliseconds()).Scan(&old).Error; err != nil {
		return 0, err
	}
	deleted := 0
	for _, r := range old {
		res := db.Exec(`DELETE FROM board_records WHERE board = ? AND id = ? AND open_rec = 0`, r.Board, r.ID)
		if res.Error != nil {
			return deleted, res.Error
		}
		deleted += int(res.RowsAffected)
		if res.RowsAffected > 0 {
			if err := db.Exec(`DELETE FROM board_record_payloads WHERE board = ? AND id = ?`, r.Board, r.ID).Error; err != nil {
				return deleted, err
			}
		}
	}
	if err := db.Exec(`DELETE FROM board_batches WHERE created_at_ms < ?`, now-s.o.BatchRetention.Milliseconds()).Error; err != nil {
		return deleted, err
	}
	if err := db.Exec(`DELETE FROM board_dedupe WHERE expires_at_ms < ?`, now).Error; err != nil {
		return deleted, err
	}
	return deleted, db.Exec(`DELETE FROM board_quota WHERE window_ms < ?`, now-2*quotaWindow.Milliseconds()).Error
}
