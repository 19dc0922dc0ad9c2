package session

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"gorm.io/gorm"

	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/sqlstore"
)

// The write rule, as SQL sees it.
//
// A lease is handed to its holder only after its grant raised the session
// row's fence above the fence it had (AcquireLease runs raiseFence before
// it returns; fences are positive), and a row's fence never goes down. So
// a row whose fence is 0 has never had a lease granted on it, and none is
// held: a write without fence may go ahead with "fence = 0" in its
// condition and no lease check at all. The conditional UPDATE reads the
// row under its row lock; a grant racing it either raised the fence first
// (the write matches no row and falls back to the full rule) or waits for
// the write's commit (the write came before the lease existed).
//
// A row with a positive fence may have a lease held now, so an unfenced
// write reads the row's fence, asks the locker whether a lease is held,
// and carries the fence it read into its condition (guard): a lease taken
// in between makes it fail. That costs a SELECT and a Redis round trip
// before the transaction, which the fast path above saves.

// errFenceMoved: an unfenced write's condition met another fence than the
// one it carried. On the fast path (fence 0) it means the session has had
// a lease; otherwise that a lease was granted after the write checked.
var errFenceMoved = errors.New("session: the fence moved under the write")

// fencedSet remembers sessions whose row fence is known to be positive, so
// their unfenced writes go straight to the full rule instead of trying
// the fast path first. A fence never goes down, so an entry never turns
// false; forgetting one (the set is reset when it reaches its bound) only
// costs one fast-path miss.
type fencedSet struct {
	mu  sync.RWMutex
	max int
	m   map[string]struct{}
}

func newFencedSet(max int) *fencedSet { return &fencedSet{max: max, m: map[string]struct{}{}} }

func (f *fencedSet) has(id string) bool {
	f.mu.RLock()
	_, ok := f.m[id]
	f.mu.RUnlock()
	return ok
}

func (f *fencedSet) add(id string) {
	f.mu.Lock()
	if len(f.m) >= f.max {
		f.m = map[string]struct{}{}
	}
	f.m[id] = struct{}{}
	f.mu.Unlock()
}

// guardedWrite runs write in one transaction under the write rule. write
// applies the condition on the session row (touchQuery, with the fence it
// is given) before anything else. With a fence, the fence is the
// condition. Without one: on the fast path, fence 0 and no lease check;
// when the row has a positive fence, guard's full rule.
func guardedWrite[T any](ctx context.Context, s *Service, id string, c WriteCondition, write func(tx *gorm.DB, fence int64) (T, error), then []sqlstore.Then[T]) (T, error) {
	var zero T
	if c.Fence == nil && !s.fenced.has(id) {
		out, err := transact(ctx, s, func(tx *gorm.DB) (T, error) { return write(tx, 0) }, then...)
		if !errors.Is(err, errFenceMoved) {
			return out, err
		}
		s.fenced.add(id)
	}
	fence, err := s.guard(ctx, id, c)
	if err != nil {
		return zero, err
	}
	out, err := transact(ctx, s, func(tx *gorm.DB) (T, error) { return write(tx, fence) }, then...)
	if errors.Is(err, errFenceMoved) {
		return zero, &LeaseHeld{} // a lease was granted after the write checked
	}
	return out, err
}

// transact runs fn in one transaction bounded by the SQL timeout.
func transact[T any](ctx context.Context, s *Service, fn func(tx *gorm.DB) (T, error), then ...sqlstore.Then[T]) (T, error) {
	sctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	out, err := sqlstore.Transact(sctx, s.db, fn, then...)
	return out, storeErr(err)
}

// guard applies the write rule before a write: with a fence, the fence is
// the condition; without one, no lease may be held, and the row's fence
// read before that check becomes the condition. A row whose fence is 0
// never had a lease (see above): no lease check.
func (s *Service) guard(ctx context.Context, id string, c WriteCondition) (fence int64, err error) {
	if c.Fence != nil {
		return *c.Fence, nil
	}
	sctx, cancel := s.sqlCtx(ctx)
	row, err := readSession(s.db.WithContext(sctx), id)
	cancel()
	if err != nil {
		return 0, storeErr(err)
	}
	if row.State != Open {
		return 0, ErrClosed
	}
	if row.Fence == 0 {
		return 0, nil
	}
	s.fenced.add(id)
	info, err := s.o.Locker.Holder(ctx, s.key(id))
	switch {
	case err == nil:
		return 0, &LeaseHeld{Holder: info.Holder, ExpiresAt: info.ExpiresAt}
	case errors.Is(err, locks.ErrNotHeld), errors.Is(err, locks.ErrUnavailable):
		// Free, or Redis cannot tell: the fence condition still holds the line.
		return row.Fence, nil
	}
	return 0, err
}

// touchQuery is the write's condition on the session row: fence and open
// state, the revision when the write names one, and the limits its growth
// must stay within (limits.go). set is the caller's SET clause; the
// growth's bytes and keys are added to it.
func touchQuery(id string, c WriteCondition, fence int64, g growth, set string, args ...any) (string, []any) {
	if g.bytes != 0 {
		set += `, size_bytes = size_bytes + ?`
		args = append(args, g.bytes)
	}
	if g.keys != 0 {
		set += `, state_keys = state_keys + ?`
		args = append(args, g.keys)
	}
	q := `UPDATE sessions SET ` + set + ` WHERE session_id = ? AND fence = ? AND state = 'open'`
	args = append(args, id, fence)
	if c.ExpectedRevision != nil {
		q += ` AND revision = ?`
		args = append(args, *c.ExpectedRevision)
	}
	for _, l := range g.checks() {
		q += ` AND ` + l.col + ` + ? <= ?`
		args = append(args, l.delta, l.limit)
	}
	return q, args
}

// conditionalTouch applies the condition with set; a miss is explained.
func (s *Service) conditionalTouch(tx *gorm.DB, id string, c WriteCondition, fence int64, g growth, set string, args ...any) error {
	q, args := touchQuery(id, c, fence, g, set, args...)
	res := tx.Exec(q, args...)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 1 {
		return nil
	}
	return explainMiss(tx, id, c, fence, g)
}

// explainMiss says why a conditional write on the session row matched no
// row: closed, another fence, another revision, a limit. An unfenced write
// that met another fence is errFenceMoved, which guardedWrite resolves.
// The row is re-read after the miss with a locking read, which sees the
// latest committed row (a plain read in an InnoDB transaction may see the
// snapshot of an earlier read); counters and revisions only grow while
// the session is open, so what made the write miss is still there.
func explainMiss(tx *gorm.DB, id string, c WriteCondition, fence int64, g growth) error {
	row, err := readSessionLatest(tx, id)
	switch {
	case err != nil:
		return err
	case row.State != Open:
		return ErrClosed
	case row.Fence != fence && c.Fence != nil:
		return &StaleFence{Fence: fence, Current: row.Fence}
	case row.Fence != fence:
		return errFenceMoved
	case c.ExpectedRevision != nil && row.Revision != *c.ExpectedRevision:
		return &RevisionConflict{Current: row.Revision}
	}
	if err := g.over(row); err != nil {
		return err
	}
	return fmt.Errorf("session: %s changed under the write", id)
}
