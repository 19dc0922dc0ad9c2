package audit

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

// The change feed's positions. An event's id is assigned when its
// transaction inserts it, and concurrent transactions commit out of id
// order, so a reader that resumes "after id n" can miss an event with a
// smaller id that committed later. The feed therefore orders events by
// seq, stamped after commit by Stamp:
//
//   - Stamp reads the feed's head (audit_feed, under lock; see marks.go)
//     and the committed, unstamped events in one transaction, gives them
//     head+1, head+2, ..., raises the head and commits. seq is unique, so
//     of two stampers that read the same head one fails and retries. The
//     head is kept apart from the events, so pruning them never hands a
//     position out again.
//   - A stamp of MAX+1 starts only after MAX committed (it read it), so seq
//     k+1 never becomes visible before seq k: the stamped events a reader
//     sees are always exactly seq 1..head, with no hole.
//
// A reader that resumes after seq n (ReadAfter) therefore gets every event
// of the feed after n, once, in order. Events are stamped by one process at
// a time in practice (events.Sequencer runs under a job lease), but the
// argument above does not depend on it.

// ErrStampRace: another stamper stamped some of the same events or took
// the same positions first; nothing was written, and the next Stamp goes on.
var ErrStampRace = errors.New("audit: another stamper moved first")

// Stamp gives the committed events that have no seq yet the next feed
// positions, oldest id first, at most batch of them, in one transaction.
// It returns how many it stamped and the feed's head after it.
func Stamp(ctx context.Context, db *gorm.DB, batch int) (stamped int, head int64, err error) {
	if batch <= 0 {
		return 0, 0, errors.New("audit: batch must be positive")
	}
	type result struct {
		n    int
		head int64
	}
	// READ COMMITTED: at REPEATABLE READ the stamping UPDATE takes next-key
	// locks on the unstamped events' entries of the seq index, whose gap is
	// where every new event is inserted, so a stamper stopped before its
	// commit (a paused process) held up the writes of every instance.
	// Nothing here needs a snapshot: the feed row's lock orders stampers,
	// and each read is of what committed before it took that lock.
	r, err := sqlstore.TransactIsolated(ctx, db, sql.LevelReadCommitted, func(tx *gorm.DB) (result, error) {
		m, err := readMarks(tx, true)
		if err != nil {
			return result{}, err
		}
		var max struct{ Head *int64 }
		if err := tx.Raw(`SELECT MAX(seq) AS head FROM audit_events`).Scan(&max).Error; err != nil {
			return result{}, err
		}
		head := m.Head
		if max.Head != nil && *max.Head > head { // never below a position stamped
			head = *max.Head
		}
		var ids []int64
		if err := tx.Raw(`SELECT id FROM audit_events WHERE seq IS NULL ORDER BY id LIMIT ?`, batch).
			Scan(&ids).Error; err != nil {
			return result{}, err
		}
		if len(ids) == 0 {
			return result{head: head}, nil
		}
		var b strings.Builder
		args := make([]any, 0, 3*len(ids))
		b.WriteString(`UPDATE audit_events SET seq = CASE id`)
		for i, id := range ids {
			b.WriteString(` WHEN ? THEN ?`)
			args = append(args, id, head+int64(i)+1)
		}
		b.WriteString(` END WHERE seq IS NULL AND id IN (?` + strings.Repeat(`, ?`, len(ids)-1) + `)`)
		for _, id := range ids {
			args = append(args, id)
		}
		res := tx.Exec(b.String(), args...)
		if res.Error != nil {
			if sqlstore.IsDuplicate(res.Error) {
				return result{}, ErrStampRace
			}
			return result{}, res.Error
		}
		if res.RowsAffected != int64(len(ids)) {
			return result{}, ErrStampRace // rolled back: a row was stamped meanwhile
		}
		if err := tx.Exec(`UPDATE audit_feed SET head = ? WHERE id = 1 AND head < ?`, head+int64(len(ids)), head+int64(len(ids))).Error; err != nil {
			return result{}, err
		}
		return result{n: len(ids), head: head + int64(len(ids))}, nil
	})
	if errors.Is(err, ErrStampRace) || sqlstore.IsDuplicate(err) {
		return 0, 0, ErrStampRace
	}
	if err != nil {
		return 0, 0, fmt.Errorf("audit: stamp: %w", err)
	}
	return r.n, r.head, nil
}

// Stamped is an event of the change feed: an audit event and its position.
type Stamped struct {
	Seq int64
	Event
}

// ReadAfter returns the feed's events with seq > after, in seq order, at
// most limit of them. A position some of whose later events were pruned
// is a *PrunedError, one beyond the feed's head an *AheadError (see
// marks.go); 0 reads from the oldest event kept.
func ReadAfter(ctx context.Context, db *gorm.DB, after int64, limit int) ([]Stamped, error) {
	return readAfter(ctx, db, "", nil, after, limit)
}

// ReadBoardAfter is ReadAfter of one board's events (the index
// audit_events_board): the others are not read.
func ReadBoardAfter(ctx context.Context, db *gorm.DB, board string, after int64, limit int) ([]Stamped, error) {
	if board == "" {
		return nil, errors.New("audit: board is required")
	}
	return readAfter(ctx, db, board, nil, after, limit)
}

func readAfter(ctx context.Context, db *gorm.DB, board string, scope *Scope, after int64, limit int) ([]Stamped, error) {
	if limit <= 0 {
		return nil, errors.New("audit: limit must be positive")
	}
	var rows []struct {
		Seq                                                             int64
		ID                                                              int64
		AtMs                                                            int64
		Actor, Instance, Action, Agent, Env, SessionID, Board, Resource string
		Details, TraceID, SpanID                                        string
	}
	where, args := `seq > ?`, []any{after}
	if board != "" {
		where, args = `board = ? AND seq > ?`, []any{board, after}
	}
	if scope != nil {
		cond, a, _ := scope.cond()
		where, args = where+` AND `+cond, append(args, a...)
	}
	if err := db.WithContext(ctx).Raw(`SELECT seq, id, at_ms, actor, instance, action, agent, env, session_id, board, resource, details, trace_id, span_id
		FROM audit_events WHERE `+where+` ORDER BY seq LIMIT ?`, append(args, limit)...).Scan(&rows).Error; err != nil {
		return nil, sqlstore.Translate(err)
	}
	// The marks are read after the rows: a prune that deleted any of them
	// had committed its mark before the rows were read.
	m, err := readMarks(db.WithContext(ctx), false)
	if err != nil {
		return nil, err
	}
	if after > 0 { // 0 reads from the oldest event kept
		if err := checkAfter(after, m); err != nil {
			return nil, err
		}
	}
	out := make([]Stamped, len(rows))
	for i, r := range rows {
		out[i] = Stamped{Seq: r.Seq, Event: Event{ID: r.ID, At: time.UnixMilli(r.AtMs).UTC(), Actor: r.Actor,
			Instance: r.Instance, Action: r.Action, Agent: r.Agent, Env: r.Env, SessionID: r.SessionID, Board: r.Board,
			Resource: r.Resource, Details: json.RawMessage(r.Details), TraceID: r.TraceID, SpanID: r.SpanID}}
	}
	return out, nil
}

// Head is the highest seq ever stamped (0 when none was): it never
// decreases, whatever retention deletes.
func Head(ctx context.Context, db *gorm.DB) (int64, error) {
	m, err := ReadMarks(ctx, db)
	return m.Head, err
}

// OldestAfter is the lowest seq kept whose event was recorded at or after
// notBefore: the oldest position a reader may resume from is that minus
// one. Stamps follow recording time closely (each is stamped moments after
// its commit), so it is found by a binary search over seq with point
// reads. It returns head+1 when no such event is kept.
func OldestAfter(ctx context.Context, db *gorm.DB, notBefore time.Time) (int64, error) {
	db = db.WithContext(ctx)
	// The head is read before the lowest seq: events are stamped (and the
	// head raised) all the while. Read after, a head could cover events
	// stamped between the two reads, and "none stamped yet" would become
	// "all of them pruned": a reader from the oldest would skip them all.
	head, err := Head(ctx, db)
	if err != nil {
		return 0, err
	}
	var lo struct{ Low *int64 }
	if err := db.Raw(`SELECT MIN(seq) AS low FROM audit_events`).Scan(&lo).Error; err != nil {
		return 0, sqlstore.Translate(err)
	}
	if lo.Low == nil {
		return head + 1, nil // every position up to the head (read first) was pruned
	}
	cut := notBefore.UnixMilli()
	// atOrAfter: the first kept event at seq >= s, and whether it is new enough.
	atOrAfter := func(s int64) (int64, bool, error) {
		var r []struct {
			Seq  int64
			AtMs int64
		}
		if err := db.Raw(`SELECT seq, at_ms FROM audit_events WHERE seq >= ? ORDER BY seq LIMIT 1`, s).Scan(&r).Error; err != nil {
			return 0, false, sqlstore.Translate(err)
		}
		if len(r) == 0 {
			return head + 1, true, nil
		}
		return r[0].Seq, r[0].AtMs >= cut, nil
	}
	low, high := *lo.Low, head+1 // the first fresh position is in [low, high]
	for low < high {
		mid := low + (high-low)/2
		_, fresh, err := atOrAfter(mid)
		if err != nil {
			return 0, err
		}
		if fresh {
			high = mid
		} else {
			low = mid + 1
		}
	}
	s, _, err := atOrAfter(low)
	if err != nil {
		return 0, err
	}
	m, err := ReadMarks(ctx, db)
	if err != nil {
		return 0, err
	}
	return max(s, m.PrunedThrough+1), nil
}
