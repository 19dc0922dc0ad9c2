package board

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/intent"
	"github.com/promptd/promptd/sqlstore"
)

// Update is a compare-and-set of a record: the revision it read and,
// while the record is claimed, the claim's fence. State and Payload are
// what changes (nil: unchanged).
type Update struct {
	ExpectedRevision int64
	State            *string
	Payload          json.RawMessage
	Fence            *int64
	// Merge merges Payload over the changes made since ExpectedRevision
	// (from BasePayload when given, checked against the payload the board
	// kept at that revision) instead of a revision conflict.
	Merge       bool
	BasePayload json.RawMessage
	// Intent, when set, must be live with its fence and cover the record.
	Intent *intent.Ref
}

// checkWriter applies the write rule to r at now: a claimed record takes
// only writes with its fence, before its claim expires.
func checkWriter(r *recordRow, now int64, fence *int64) error {
	switch {
	case fence != nil && *fence != r.Fence:
		return &StaleFence{Fence: *fence, Current: r.Fence}
	case r.Owner == "":
		return nil
	case fence == nil:
		return &Claimed{Owner: r.Owner, ExpiresAt: msTime(r.ClaimExpiresAtMs)}
	case r.ClaimExpiresAtMs == nil || *r.ClaimExpiresAtMs <= now:
		return &ClaimExpired{ExpiresAt: msTime(r.ClaimExpiresAtMs)}
	}
	return nil
}

func msTime(ms *int64) time.Time {
	if ms == nil {
		return time.Time{}
	}
	return time.UnixMilli(*ms).UTC()
}

// conflictKind names a refused write for the metrics ("" for others).
func conflictKind(err error) string {
	var (
		rc *RevisionConflict
		sf *StaleFence
		ce *ClaimExpired
		cl *Claimed
	)
	switch {
	case errors.As(err, &rc):
		return "revision_conflict"
	case errors.As(err, &sf):
		return "stale_fence"
	case errors.As(err, &ce):
		return "claim_expired"
	case errors.As(err, &cl):
		return "claimed"
	}
	return ""
}

// Patch applies u to a record: one transaction that reads the board's
// machine and the record, checks the transition and the write rule, and
// writes under the revision (and, for a fenced write, the fence and the
// claim's expiry by the SQL clock) in the UPDATE's own condition.
func (s *Service) Patch(ctx context.Context, board, id string, u Update) (*Record, error) {
	if err := checkID("board", board); err != nil {
		return nil, err
	}
	if err := checkID("id", id); err != nil {
		return nil, err
	}
	if u.ExpectedRevision < 1 {
		return nil, invalidf("expected_revision", "expected_revision is required: the record's revision, >= 1")
	}
	if u.Fence != nil && *u.Fence <= 0 {
		return nil, invalidf("fence", "fence must be positive")
	}
	if u.Payload != nil {
		if err := validPayload(u.Payload); err != nil {
			return nil, err
		}
	}
	if u.Merge && u.Payload == nil {
		return nil, invalidf("payload", "a merge needs the payload to merge")
	}
	if u.BasePayload != nil && (!u.Merge || !json.Valid(u.BasePayload)) {
		return nil, invalidf("base_payload", "base_payload is JSON, for a merge (merge: true)")
	}
	if u.Intent != nil && s.o.Intents == nil {
		return nil, invalidf("intent", "this server keeps no intents")
	}
	ctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	out, err := sqlstore.Transact(ctx, s.db, func(tx *gorm.DB) (*Record, error) {
		b, def, r, err := s.readBoth(tx, board, id)
		if err != nil {
			return nil, err
		}
		// the fence first: a holder whose claim was reclaimed (the revision
		// moved with it, and another may have completed the record since)
		// learns that, not a bare revision conflict or invalid transition
		if u.Fence != nil && *u.Fence != r.Fence {
			return nil, &StaleFence{Fence: *u.Fence, Current: r.Fence}
		}
		if def.IsTerminal(r.State) {
			return nil, &InvalidTransition{State: r.State}
		}
		if err := checkWriter(r, b.NowMs, u.Fence); err != nil {
			return nil, err
		}
		if u.Intent != nil {
			if err := s.o.Intents.Check(tx, *u.Intent, "intent", intent.Target{Board: board, Record: id}); err != nil {
				return nil, err
			}
		}
		payload := u.Payload
		if r.Revision != u.ExpectedRevision {
			if !u.Merge || u.ExpectedRevision > r.Revision {
				return nil, &RevisionConflict{Expected: u.ExpectedRevision, Current: r.Revision}
			}
			if payload, err = s.merged(tx, r, u.ExpectedRevision, u.BasePayload, u.Payload); err != nil {
				return nil, err
			}
		}
		next, err := def.updated(r, b.NowMs, u.State, payload)
		if err != nil {
			return nil, err
		}
		// the revision-checked write first: the payload's history row is
		// keyed by the next revision, which only the winner may take
		if err := s.write(tx, r, &next); err != nil {
			return nil, err
		}
		if err := s.keepPayload(tx, r, &next); err != nil {
			return nil, err
		}
		return next.record(), s.appendEvent(ctx, tx, "board.record_updated", &next)
	})
	if err != nil {
		s.m.conflict(board, conflictKind(err))
		return nil, storeErr(err)
	}
	if out.Owner == "" {
		s.publish(ctx, board, out.Revision) // a record back in the from state wakes claimers
	}
	return out, nil
}

// updated is r after a write of state and payload (nil: unchanged) at
// now: its next revision, the transition checked against the machine, a
// claim ended by a state that ends it, an unclaimable record exhausted.
func (def *Definition) updated(r *recordRow, now int64, state *string, payload json.RawMessage) (recordRow, error) {
	next := *r
	next.Revision++
	next.UpdatedAtMs = now
	if payload != nil {
		next.Payload = string(payload)
	}
	if state != nil && *state != r.State {
		to := *state
		// the claim's "to" state is entered through a claim only
		if !def.Allows(r.State, to) || (to == def.Claim.To && r.Owner == "") {
			return next, &InvalidTransition{State: r.State, To: to}
		}
		next.State = to
		if r.Owner != "" && def.endsClaim(to) {
			next.Owner, next.ClaimExpiresAtMs, next.Fence = "", nil, r.Fence+1
		}
		if def.IsTerminal(to) {
			next.OpenRec = 0
		}
	}
	// left unowned in the claim's from state with no attempt left, the
	// record could never be claimed again, nor be exhausted by the
	// sweeper (which looks at expired claims only): it is exhausted
	// here, as a release on the last attempt exhausts it
	if next.Owner == "" && next.State == def.Claim.From && next.Attempts >= def.Claim.MaxAttempts {
		next.State, next.OpenRec = def.Claim.Exhausted, 0
	}
	return next, nil
}

// readBoth reads one record, its board's machine and the SQL clock in
// one round trip.
// readClaimed is readBoth for a heartbeat or release: fence must be the
// record's live claim. Another fence is StaleFence whatever became of the
// record since (completed by the next holder included); a terminal record
// is InvalidTransition; an expired claim ClaimExpired (checkWriter).
func (s *Service) readClaimed(tx *gorm.DB, board, id string, fence int64) (*boardRow, *Definition, *recordRow, error) {
	b, def, r, err := s.readBoth(tx, board, id)
	switch {
	case err != nil:
		return nil, nil, nil, err
	case fence != r.Fence:
		return nil, nil, nil, &StaleFence{Fence: fence, Current: r.Fence}
	case def.IsTerminal(r.State):
		return nil, nil, nil, &InvalidTransition{State: r.State}
	case r.Owner == "":
		return nil, nil, nil, &StaleFence{Fence: fence, Current: r.Fence}
	}
	if err := checkWriter(r, b.NowMs, &fence); err != nil {
		return nil, nil, nil, err
	}
	return b, def, r, nil
}

func (s *Service) readBoth(tx *gorm.DB, board, id string) (*boardRow, *Definition, *recordRow, error) {
	now, nargs := s.nowExpr(tx)
	var (
		rec        recordRow
		definition string
		nowMs      int64
	)
	found, err := queryOne(tx, `SELECT `+qualifiedRecordCols+`, b.definition AS definition, `+now+` AS now_ms
		FROM board_records r JOIN boards b ON b.board = r.board WHERE r.board = ? AND r.id = ?`,
		append(append([]any{}, nargs...), board, id), rec.dest(&definition, &nowMs)...)
	if err != nil {
		return nil, nil, nil, err
	}
	if !found { // which of the two is missing
		if _, err := s.readBoard(tx, board, false); err != nil {
			return nil, nil, nil, err
		}
		return nil, nil, nil, ErrRecordNotFound
	}
	def, err := parseDefinition(definition)
	if err != nil {
		return nil, nil, nil, err
	}
	return &boardRow{Board: board, Definition: definition, NowMs: nowMs}, def, &rec, nil
}

// write stores next over prev: the UPDATE's condition is prev's revision
// and fence and, while prev was claimed, an unexpired claim by the SQL
// clock at the moment of the write. A miss is explained from a fresh read.
func (s *Service) write(tx *gorm.DB, prev, next *recordRow) error {
	q := `UPDATE board_records SET revision = ?, state = ?, owner = ?, fence = ?, claim_expires_at_ms = ?, claim_ttl_ms = ?,
		attempts = ?, payload = ?, open_rec = ?, updated_at_ms = ? WHERE board = ? AND id = ? AND revision = ? AND fence = ?`
	args := []any{next.Revision, next.State, next.Owner, next.Fence, next.ClaimExpiresAtMs, next.ClaimTtlMs, next.Attempts,
		next.Payload, next.OpenRec, next.UpdatedAtMs, prev.Board, prev.ID, prev.Revision, prev.Fence}
	if prev.Owner != "" {
		now, nargs := s.nowExpr(tx)
		q += ` AND claim_expires_at_ms > ` + now
		args = append(args, nargs...)
	}
	res, err := sqlstore.ExecDirect(tx, q, args...)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	// a locking read: it sees the row the UPDATE met (a plain read would
	// see the transaction's snapshot, taken before a concurrent writer
	// committed, and explain the miss as an expired claim)
	cur, err := readRecord(tx, prev.Board, prev.ID, true)
	if err != nil {
		return err
	}
	if cur.Fence != prev.Fence {
		return &StaleFence{Fence: prev.Fence, Current: cur.Fence}
	}
	if cur.Revision != prev.Revision {
		return &RevisionConflict{Expected: prev.Revision, Current: cur.Revision}
	}
	return &ClaimExpired{ExpiresAt: msTime(cur.ClaimExpiresAtMs)}
}

// Heartbeat extends a claim by ttl (0: the claim's TTL) from now, by the
// SQL clock. It carries the claim's fence and must come before the claim
// expires. The record's revision does not change (a heartbeat is not a
// change of the record), so the holder's next write keeps its revision.
func (s *Service) Heartbeat(ctx context.Context, board, id string, fence int64, ttl time.Duration) (*Record, error) {
	if err := checkID("board", board); err != nil {
		return nil, err
	}
	if err := checkID("id", id); err != nil {
		return nil, err
	}
	if fence <= 0 {
		return nil, invalidf("fence", "fence is required: the claim's fence")
	}
	ctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	out, err := sqlstore.Transact(ctx, s.db, func(tx *gorm.DB) (*Record, error) {
		_, _, r, err := s.readClaimed(tx, board, id, fence)
		if err != nil {
			return nil, err
		}
		t := ttl
		if t <= 0 {
			t = time.Duration(r.ClaimTtlMs) * time.Millisecond
		}
		now, nargs := s.nowExpr(tx)
		args := append(append([]any{}, nargs...), t.Milliseconds(), t.Milliseconds(), board, id, fence)
		args = append(args, nargs...)
		res := tx.Exec(`UPDATE board_records SET claim_expires_at_ms = `+now+` + ?, claim_ttl_ms = ?
			WHERE board = ? AND id = ? AND fence = ? AND owner <> '' AND claim_expires_at_ms > `+now, args...)
		if res.Error != nil {
			return nil, res.Error
		}
		cur, err := readRecord(tx, board, id, false)
		if err != nil {
			return nil, err
		}
		if res.RowsAffected != 1 {
			if cur.Fence != fence {
				return nil, &StaleFence{Fence: fence, Current: cur.Fence}
			}
			return nil, &ClaimExpired{ExpiresAt: msTime(cur.ClaimExpiresAtMs)}
		}
		return cur.record(), nil
	})
	if err != nil {
		s.m.conflict(board, conflictKind(err))
		return nil, storeErr(err)
	}
	return out, nil
}

// Release ends a claim: the record goes back to the claim's from state
// (to the exhausted state once it was claimed max_attempts times), its
// owner cleared and its fence raised.
func (s *Service) Release(ctx context.Context, board, id string, fence int64) (*Record, error) {
	if err := checkID("board", board); err != nil {
		return nil, err
	}
	if err := checkID("id", id); err != nil {
		return nil, err
	}
	if fence <= 0 {
		return nil, invalidf("fence", "fence is required: the claim's fence")
	}
	ctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	out, err := sqlstore.Transact(ctx, s.db, func(tx *gorm.DB) (*Record, error) {
		b, def, r, err := s.readClaimed(tx, board, id, fence)
		if err != nil {
			return nil, err
		}
		next := *r
		next.Revision++
		next.State, next.Owner, next.ClaimExpiresAtMs, next.Fence, next.UpdatedAtMs = def.Claim.From, "", nil, r.Fence+1, b.NowMs
		if r.Attempts >= def.Claim.MaxAttempts { // never claimable again
			next.State, next.OpenRec = def.Claim.Exhausted, 0
		}
		if err := s.write(tx, r, &next); err != nil {
			return nil, err
		}
		return next.record(), s.appendEvent(ctx, tx, "board.record_released", &next)
	})
	if err != nil {
		s.m.conflict(board, conflictKind(err))
		return nil, storeErr(err)
	}
	s.publish(ctx, board, out.Revision)
	return out, nil
}
