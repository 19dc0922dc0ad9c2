package board

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/sqlstore"
)

// ClaimInput is a claim request.
type ClaimInput struct {
	Holder string
	// TTL of the claim; 0: the board's claim.ttl_ms.
	TTL time.Duration
	// Wait: how long claim-next waits for an eligible record, woken by new
	// or released records (on any instance), not by polling.
	Wait time.Duration
	// MinPriority, when set, leaves records of lower priority alone.
	MinPriority *int64
}

// errNone: no eligible record; the claim's transaction rolls back (its
// commit hooks stay unspent).
var errNone = errors.New("board: no eligible record")

// ClaimNext takes the first record in board order that is in the claim's
// from state or whose claim has expired (reclaiming it in the same
// transaction): state -> to, owner, fence + 1, claim_expires_at by the SQL
// clock, attempts + 1. Nothing within in.Wait: nil, nil.
func (s *Service) ClaimNext(ctx context.Context, board string, in ClaimInput) (*Record, error) {
	return s.claim(ctx, board, "", in)
}

// ClaimOne claims one record, which must be eligible (in the from state,
// or claimed with an expired claim; else *InvalidTransition).
func (s *Service) ClaimOne(ctx context.Context, board, id string, in ClaimInput) (*Record, error) {
	if err := checkID("id", id); err != nil {
		return nil, err
	}
	in.Wait = 0
	return s.claim(ctx, board, id, in)
}

func (s *Service) claim(ctx context.Context, board, id string, in ClaimInput) (*Record, error) {
	if err := checkID("board", board); err != nil {
		return nil, err
	}
	if err := checkOpaque("holder", in.Holder); err != nil {
		return nil, err
	}
	if in.TTL != 0 && (in.TTL < MinClaimTTL || in.TTL > MaxClaimTTL) {
		return nil, invalidf("ttl_ms", "ttl_ms must be %d..%d", MinClaimTTL.Milliseconds(), MaxClaimTTL.Milliseconds())
	}
	if in.Wait < 0 || in.Wait > MaxWait {
		return nil, invalidf("wait_ms", "wait_ms must be 0..%d", MaxWait.Milliseconds())
	}
	start := time.Now()
	deadline := start.Add(in.Wait)
	actor := audit.Actor(ctx)
	win, err := s.countClaim(ctx, board, actor)
	if err != nil {
		return nil, err
	}
	for {
		wake := s.wakeup(board) // before the attempt: a change during it is not missed
		r, err := s.claimOnce(ctx, board, id, in)
		// InnoDB may pick a claim as a deadlock victim (next-key locks of
		// concurrent claims and completions); it was rolled back whole,
		// so it is tried again, a few times
		for retry := 0; retry < 5 && errors.Is(err, sqlstore.ErrUnavailable) && ctx.Err() == nil; retry++ {
			time.Sleep(time.Duration(retry+1) * time.Millisecond)
			r, err = s.claimOnce(ctx, board, id, in)
		}
		switch {
		case err == nil:
			s.m.claimed(board, time.Since(start))
			s.publish(ctx, board, r.Revision)
			return r, nil
		case !errors.Is(err, errNone):
			s.uncountAt(ctx, board, actor, win)
			return nil, storeErr(err)
		}
		left := time.Until(deadline)
		if left <= 0 {
			s.uncountAt(ctx, board, actor, win)
			return nil, nil
		}
		t := time.NewTimer(left)
		select {
		case <-wake:
			t.Stop()
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			s.uncountAt(ctx, board, actor, win)
			return nil, ctx.Err()
		}
	}
}

// claimOnce is one claim transaction.
func (s *Service) claimOnce(ctx context.Context, board, id string, in ClaimInput) (*Record, error) {
	sctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	// READ COMMITTED: the claim's locking reads take no gap locks and keep
	// no locks on rows they passed over (see candidate)
	return sqlstore.TransactIsolated(sctx, s.db, sql.LevelReadCommitted, func(tx *gorm.DB) (*Record, error) {
		b, err := s.readBoard(tx, board, false)
		if err != nil {
			return nil, err
		}
		def, err := parseDefinition(b.Definition)
		if err != nil {
			return nil, err
		}
		var r *recordRow
		if id == "" {
			if r, err = s.candidate(tx, board, def, b.NowMs, in.MinPriority); err != nil {
				return nil, err
			}
		} else {
			if r, err = readRecord(tx, board, id, true); err != nil {
				return nil, err
			}
			expired := r.Owner != "" && r.ClaimExpiresAtMs != nil && *r.ClaimExpiresAtMs <= b.NowMs
			if (r.State != def.Claim.From || r.Owner != "") && !expired || def.IsTerminal(r.State) || r.Attempts >= def.Claim.MaxAttempts {
				return nil, &InvalidTransition{State: r.State, To: def.Claim.To}
			}
		}
		reclaim := r.Owner != ""
		ttl := in.TTL.Milliseconds()
		if ttl == 0 {
			ttl = def.Claim.TTLMs
		}
		exp := b.NowMs + ttl
		next := *r
		next.Revision++
		next.State, next.Owner, next.Fence, next.ClaimExpiresAtMs, next.ClaimTtlMs = def.Claim.To, in.Holder, r.Fence+1, &exp, ttl
		next.Attempts++
		next.OpenRec, next.UpdatedAtMs = 1, b.NowMs
		res := tx.Exec(`UPDATE board_records SET revision = ?, state = ?, owner = ?, fence = ?, claim_expires_at_ms = ?, claim_ttl_ms = ?,
			attempts = ?, open_rec = 1, updated_at_ms = ? WHERE board = ? AND id = ? AND revision = ?`,
			next.Revision, next.State, next.Owner, next.Fence, exp, ttl, next.Attempts, b.NowMs, board, r.ID, r.Revision)
		if res.Error != nil {
			return nil, res.Error
		}
		if res.RowsAffected != 1 { // SQLite only: MySQL holds the row
			return nil, errNone
		}
		if reclaim {
			s.m.reclaimed(board, 1)
		}
		return next.record(), s.appendEvent(ctx, tx, "board.record_claimed", &next)
	})
}

// candidate picks the first record in board order in the from state and
// the first whose claim expired, and returns the earlier of the two,
// locked; rows other claimers hold are skipped.
//
// The from-state scan walks board_records_order (board, state, priority
// DESC, created_at_ms, id) under FOR UPDATE SKIP LOCKED and stops at its
// first unlocked row. Expired claims are looked for with a plain read
// (usually none; a locking range scan of the expiry index would skip
// every entry other claims hold, and every entry completions left
// delete-marked, up to the index's end, and its next-key lock on the
// supremum deadlocked with the claims inserting their new expiry entries
// there), then the one found is locked by its key and checked again.
func (s *Service) candidate(tx *gorm.DB, board string, def *Definition, now int64, minPriority *int64) (*recordRow, error) {
	lock, force := skipLocked(tx), ""
	if lock != "" {
		force = " FORCE INDEX (board_records_order)"
	}
	prio, pargs := "", []any{}
	if minPriority != nil {
		prio, pargs = ` AND priority >= ?`, []any{*minPriority}
	}
	const order = ` ORDER BY priority DESC, created_at_ms, id LIMIT 1`
	var from, expired []recordRow
	if err := tx.Raw(`SELECT `+recordCols+` FROM board_records`+force+` WHERE board = ? AND state = ? AND owner = '' AND attempts < ?`+prio+order+lock,
		append([]any{board, def.Claim.From, def.Claim.MaxAttempts}, pargs...)...).Scan(&from).Error; err != nil {
		return nil, err
	}
	if err := tx.Raw(`SELECT `+recordCols+` FROM board_records WHERE board = ? AND claim_expires_at_ms <= ? AND owner <> '' AND attempts < ?`+
		prio+order, append([]any{board, now, def.Claim.MaxAttempts}, pargs...)...).Scan(&expired).Error; err != nil {
		return nil, err
	}
	if len(expired) == 1 && (len(from) == 0 || expired[0].before(&from[0])) {
		var got []recordRow
		if err := tx.Raw(`SELECT `+recordCols+` FROM board_records WHERE board = ? AND id = ? AND claim_expires_at_ms <= ? AND owner <> '' AND attempts < ?`+lock,
			board, expired[0].ID, now, def.Claim.MaxAttempts).Scan(&got).Error; err != nil {
			return nil, err
		}
		if len(got) == 1 {
			return &got[0], nil
		}
		// taken, completed or heartbeated since the read: the from state's
	}
	if len(from) == 0 {
		return nil, errNone
	}
	return &from[0], nil
}

// skipLocked is the locking clause of claim-next: on MySQL/MariaDB the
// rows other claimers hold are skipped, not waited for; SQLite has one
// writer.
func skipLocked(db *gorm.DB) string {
	if sqlstore.Dialect(db) == sqlstore.MySQL {
		return " FOR UPDATE SKIP LOCKED"
	}
	return ""
}
