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
	// or released records (on any instance), and looking again every
	// ClaimRecheck for what no change announced.
	Wait time.Duration
	// MinPriority, when set, leaves records of lower priority alone.
	MinPriority *int64
}

// ClaimRecheck is how often a waiting claim-next looks again when nothing
// woke it: a change that announces nothing (a claim expiring, a claim's
// transaction that locked the candidate and rolled back) is found within
// it, not only when the wait runs out.
const ClaimRecheck = 2 * time.Second

// errNone: no eligible record; the claim's transaction rolls back (and
// with it whatever its Thens wrote).
var errNone = errors.New("board: no eligible record")

// errRaced: the candidate was claimed by another between its read and
// the UPDATE (SQLite, whose reads do not lock); the claim tries again at
// once, since no event announces a claim.
var errRaced = errors.New("board: the candidate was taken meanwhile")

// ClaimNext takes the first record in board order that is in the claim's
// from state or whose claim has expired (reclaiming it in the same
// transaction): state -> to, owner, fence + 1, claim_expires_at by the SQL
// clock, attempts + 1. Nothing within in.Wait: nil, nil.
func (s *Service) ClaimNext(ctx context.Context, board string, in ClaimInput, then ...sqlstore.Then[*Record]) (*Record, error) {
	return s.claim(ctx, board, "", in, then)
}

// ClaimOne claims one record, which must be eligible (in the from state,
// or claimed with an expired claim; else *InvalidTransition).
func (s *Service) ClaimOne(ctx context.Context, board, id string, in ClaimInput, then ...sqlstore.Then[*Record]) (*Record, error) {
	if err := checkID("id", id); err != nil {
		return nil, err
	}
	in.Wait = 0
	return s.claim(ctx, board, id, in, then)
}

func (s *Service) claim(ctx context.Context, board, id string, in ClaimInput, then []sqlstore.Then[*Record]) (*Record, error) {
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
	for attempt := 0; ; attempt++ {
		// A claim publishes nothing: it makes no record claimable, and
		// waking every waiter of the board for it cost each of them a
		// claim attempt per claim.
		wake := s.wakeup(board) // before the attempt: a change during it is not missed
		r, emptyAt, err := s.claimKnown(ctx, board, id, in, then)
		switch {
		case errors.Is(err, errRaced):
			continue
		case err != nil:
			return nil, storeErr(err)
		case r != nil:
			s.m.claimed(board, time.Since(start))
			return r, nil
		}
		v, def, err := s.readClaimView(ctx, board, in.MinPriority)
		if err != nil {
			return nil, storeErr(err)
		}
		if emptyAt > 0 && emptyAt == v.Revision && v.ExpiredID == nil {
			// the quick path found no record in the from state under this
			// machine, and there is no expired claim: nothing to claim
			err = errNone
		} else {
			r, err = s.retryVictim(ctx, func() (*Record, error) { return s.claimOnce(ctx, board, id, in, def, v.ExpiredID, 0, then...) })
		}
		switch {
		case err == nil:
			s.m.claimed(board, time.Since(start))
			return r, nil
		case errors.Is(err, errRaced):
			continue
		case !errors.Is(err, errNone):
			return nil, storeErr(err)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, nil
		}
		if s.waiting != nil {
			s.waiting(board)
		}
		t := time.NewTimer(min(left, s.recheck))
		select {
		case <-wake:
			t.Stop()
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
}

// claimKnown is claim-next's quick path on a board whose machine a claim
// read before: the machine's revision, the clock and the first
// expired claim come with the candidate's locking read, in one statement
// instead of two. A nil record: the caller goes the long way, which reads
// the board first; emptyAt is then the machine's revision under which no
// record was in the from state (0: not known, or the board was redefined
// since and its machine is read again).
func (s *Service) claimKnown(ctx context.Context, board, id string, in ClaimInput, then []sqlstore.Then[*Record]) (r *Record, emptyAt int64, err error) {
	cd, known := s.cachedDef(board)
	if id != "" || !known {
		return nil, 0, nil
	}
	r, err = s.retryVictim(ctx, func() (*Record, error) { return s.claimOnce(ctx, board, "", in, cd.def, nil, cd.rev, then...) })
	switch {
	case err == nil:
		return r, 0, nil
	case errors.Is(err, errEmpty):
		return nil, cd.rev, nil
	case errors.Is(err, errRedefined):
		return nil, 0, nil
	}
	return nil, 0, err
}

// errEmpty: on claimKnown's path, no record in the from state (whether a
// claim expired the long way's view says).
var errEmpty = errors.New("board: no record in the from state")

// errRedefined: the board's machine changed since the claim's cached copy;
// the claim's transaction rolls back.
var errRedefined = errors.New("board: redefined since the claim read it")

// retryVictim runs a claim transaction again, a few times, when InnoDB
// picked it as a deadlock victim: it was rolled back whole.
func (s *Service) retryVictim(ctx context.Context, claim func() (*Record, error)) (*Record, error) {
	r, err := claim()
	for retry := 0; retry < 5 && errors.Is(err, sqlstore.ErrUnavailable) && ctx.Err() == nil; retry++ {
		time.Sleep(time.Duration(retry+1) * time.Millisecond)
		r, err = claim()
	}
	return r, err
}

// claimView is what a claim attempt reads, in one plain read, before its
// transaction: the board's machine, the SQL clock, and the first record
// in board order whose claim expired (none, usually), which the
// transaction locks by its key and checks again.
type claimView struct {
	Definition string
	Revision   int64
	NowMs      int64
	ExpiredID  *string
}

func (s *Service) readClaimView(ctx context.Context, board string, minPriority *int64) (*claimView, *Definition, error) {
	ctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	db := s.db.WithContext(ctx)
	now, nargs := s.nowExpr(db)
	prio, pargs := "", []any{}
	if minPriority != nil {
		prio, pargs = ` AND priority >= ?`, []any{*minPriority}
	}
	// the board's expiry index: MariaDB picked the cross-board one
	// (board_records_expiring), whose range holds every board's expired
	// claims
	force := ""
	if sqlstore.Dialect(db) == sqlstore.MySQL {
		force = " FORCE INDEX (board_records_expiry)"
	}
	q := `SELECT definition, revision, ` + now + ` AS now_ms, ` + expiredFirst(force, "boards.board", now, prio) + ` AS expired_id
		FROM boards WHERE board = ?`
	args := append(append(append(append([]any{}, nargs...), nargs...), pargs...), board)
	var rows []claimView
	if err := db.Raw(q, args...).Scan(&rows).Error; err != nil {
		return nil, nil, err
	}
	if len(rows) == 0 {
		return nil, nil, ErrBoardNotFound
	}
	def, err := parseDefinition(rows[0].Definition)
	if err != nil {
		return nil, nil, err
	}
	s.keepDef(board, rows[0].Revision, def)
	return &rows[0], def, nil
}

// expiredFirst is the subquery of the first record in board order of
// board (an SQL expression) whose claim expired: a plain read, also within
// a locking statement (MariaDB and MySQL lock no row a subquery of the
// select list reads).
func expiredFirst(force, board, now, prio string) string {
	return `(SELECT id FROM board_records` + force + ` WHERE board = ` + board + ` AND claim_expires_at_ms <= ` + now + ` AND owner <> ''` + prio + `
			ORDER BY priority DESC, created_at_ms, id LIMIT 1)`
}

// claimRow is a record and the SQL clock read with it, and on claimKnown's
// path the board's revision and first expired claim.
type claimRow struct {
	Rec       recordRow `gorm:"embedded"`
	NowMs     int64
	DefRev    int64
	ExpiredID *string
}

// claimOnce is one claim transaction. defRev > 0 (claimKnown): def is the
// machine at that revision, checked by the candidate's read, which also
// finds the first expired claim (expiredID is not known yet).
func (s *Service) claimOnce(ctx context.Context, board, id string, in ClaimInput, def *Definition, expiredID *string, defRev int64, then ...sqlstore.Then[*Record]) (*Record, error) {
	sctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	// READ COMMITTED: the claim's locking reads take no gap locks and keep
	// no locks on rows they passed over (see candidate)
	return sqlstore.TransactIsolated(sctx, s.db, sql.LevelReadCommitted, func(tx *gorm.DB) (*Record, error) {
		var (
			r   *recordRow
			now int64
			err error
		)
		if id == "" {
			expired := ""
			if expiredID != nil {
				expired = *expiredID
			}
			if r, now, err = s.candidate(tx, board, def, in.MinPriority, expired, defRev); err != nil {
				return nil, err
			}
		} else {
			if now, err = s.sqlNow(tx); err != nil {
				return nil, err
			}
			if r, err = readRecord(tx, board, id, true); err != nil {
				return nil, err
			}
			expired := r.Owner != "" && r.ClaimExpiresAtMs != nil && *r.ClaimExpiresAtMs <= now
			if (r.State != def.Claim.From || r.Owner != "") && !expired || def.IsTerminal(r.State) || r.Attempts >= def.Claim.MaxAttempts {
				return nil, &InvalidTransition{State: r.State, To: def.Claim.To}
			}
		}
		reclaim := r.Owner != ""
		ttl := in.TTL.Milliseconds()
		if ttl == 0 {
			ttl = def.Claim.TTLMs
		}
		exp := now + ttl
		next := *r
		next.Revision++
		next.State, next.Owner, next.Fence, next.ClaimExpiresAtMs, next.ClaimTtlMs = def.Claim.To, in.Holder, r.Fence+1, &exp, ttl
		next.Attempts++
		next.OpenRec, next.UpdatedAtMs = 1, now
		res, err := sqlstore.ExecDirect(tx, `UPDATE board_records SET revision = ?, state = ?, owner = ?, fence = ?, claim_expires_at_ms = ?, claim_ttl_ms = ?,
			attempts = ?, open_rec = 1, updated_at_ms = ? WHERE board = ? AND id = ? AND revision = ?`,
			next.Revision, next.State, next.Owner, next.Fence, exp, ttl, next.Attempts, now, board, r.ID, r.Revision)
		if err != nil {
			return nil, err
		}
		if n, _ := res.RowsAffected(); n != 1 { // SQLite only: MySQL holds the row
			return nil, errRaced
		}
		// the quota counts claims that take a record, in the claim's own
		// transaction: one over it rolls back, and a claimer that waits
		// or finds nothing spends none of it
		if err := s.countClaim(tx, board, audit.Actor(ctx), def, now); err != nil {
			return nil, err
		}
		if reclaim {
			s.m.reclaimed(board, 1)
		}
		return next.record(), s.appendEvent(ctx, tx, "board.record_claimed", &next)
	}, then...)
}

// candidate picks the first record in board order in the from state, and
// the expired claim the claim's view found when it comes first, locked
// (rows other claimers hold are skipped), with the SQL clock.
//
// The from-state scan walks board_records_order (board, state, priority
// DESC, created_at_ms, id) under FOR UPDATE SKIP LOCKED and stops at its
// first unlocked row. Expired claims are found by a plain read (the
// claim's view), then the one found is locked by its key and checked
// again: a locking range scan of the expiry index would skip every entry
// other claims hold, and every entry completions left delete-marked, up
// to the index's end, and its next-key lock on the supremum deadlocked
// with the claims inserting their new expiry entries there.
func (s *Service) candidate(tx *gorm.DB, board string, def *Definition, minPriority *int64, expiredID string, defRev int64) (*recordRow, int64, error) {
	lock, force, forceExpiry := skipLocked(tx), "", ""
	if lock != "" {
		force, forceExpiry = " FORCE INDEX (board_records_order)", " FORCE INDEX (board_records_expiry)"
	}
	now, nargs := s.nowExpr(tx)
	prio, pargs := "", []any{}
	if minPriority != nil {
		prio, pargs = ` AND priority >= ?`, []any{*minPriority}
	}
	// claimKnown's path: the board's revision and its first expired claim
	// as plain reads within the locking one
	known, kargs := "", []any{}
	if defRev > 0 {
		known = `, (SELECT revision FROM boards WHERE board = ?) AS def_rev, ` + expiredFirst(forceExpiry, "?", now, prio) + ` AS expired_id`
		kargs = append(append(append(kargs, board, board), nargs...), pargs...)
	}
	var from, expired claimRow
	dest := from.Rec.dest(&from.NowMs)
	if defRev > 0 {
		dest = append(dest, &from.DefRev, &from.ExpiredID)
	}
	haveFrom, err := queryOne(tx, `SELECT `+recordCols+`, `+now+` AS now_ms`+known+` FROM board_records`+force+
		` WHERE board = ? AND state = ? AND owner = '' AND attempts < ?`+prio+` ORDER BY priority DESC, created_at_ms, id LIMIT 1`+lock,
		append(append(append(append([]any{}, nargs...), kargs...), board, def.Claim.From, def.Claim.MaxAttempts), pargs...), dest...)
	if err != nil {
		return nil, 0, err
	}
	if defRev > 0 {
		if !haveFrom {
			return nil, 0, errEmpty // the long way looks for expired claims
		}
		if from.DefRev != defRev {
			return nil, 0, errRedefined
		}
		if from.ExpiredID != nil {
			expiredID = *from.ExpiredID
		}
	}
	if expiredID != "" {
		haveExpired, err := queryOne(tx, `SELECT `+recordCols+`, `+now+` AS now_ms FROM board_records
			WHERE board = ? AND id = ? AND claim_expires_at_ms <= `+now+` AND owner <> '' AND attempts < ?`+lock,
			append(append(append(append([]any{}, nargs...), board, expiredID), nargs...), def.Claim.MaxAttempts), expired.Rec.dest(&expired.NowMs)...)
		if err != nil {
			return nil, 0, err
		}
		// else taken, completed or heartbeated since the view: the from
		// state's record
		if haveExpired && (!haveFrom || expired.Rec.before(&from.Rec)) {
			return &expired.Rec, expired.NowMs, nil
		}
	}
	if !haveFrom {
		return nil, 0, errNone
	}
	return &from.Rec, from.NowMs, nil
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
