package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/events"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/sqlstore"
)

// DispatcherJob names the dispatcher's job lease (locks.Keys.Job).
const DispatcherJob = "webhook-dispatcher"

const (
	cursorName    = "dispatcher"
	dispatchBatch = 500
	insertBatch   = 100
	insertBytes   = 4 << 20
	dispatchLease = 5 * time.Second
	dispatchTurn  = 30 * time.Second
)

// errCursorMoved: another dispatcher moved the cursor first; nothing was
// written.
var errCursorMoved = errors.New("webhook: another dispatcher moved the cursor")

// Run runs the dispatcher (on the instance holding its job lease) and
// this instance's deliverers until ctx ends, then waits for the attempts
// in flight (each bounded by Timeout). Without a Cipher (no
// PROMPTD_SECRET_KEY) no webhook can sign, and it does nothing: the
// cursor stays where it is, so once the key is configured the events of
// the meantime are delivered.
func (s *Service) Run(ctx context.Context) {
	if s.o.Cipher == nil {
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { s.runDispatcher(ctx) })
	wg.Go(func() { s.runDeliverer(ctx) })
	wg.Wait()
	s.wg.Wait()
}

func (s *Service) runDispatcher(ctx context.Context) {
	key, err := s.o.Keys.Job(DispatcherJob)
	if err != nil {
		panic(err) // a constant job name
	}
	for ctx.Err() == nil {
		ran, err := locks.RunExclusive(ctx, s.o.Locker, key, dispatchLease, s.dispatchFor(dispatchTurn), locks.RunUnlockedIfUnavailable())
		if err != nil && ctx.Err() == nil && !errors.Is(err, locks.ErrLeaseLost) {
			s.o.Logger.Warn("webhook dispatcher", "err", err)
		}
		if !ran || err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

func (s *Service) dispatchFor(turn time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, turn)
		defer cancel()
		for ctx.Err() == nil {
			n, cursor, err := s.DispatchOnce(ctx)
			if err != nil && ctx.Err() == nil && !errors.Is(err, errCursorMoved) {
				s.o.Logger.Warn("webhook: dispatching failed; retrying", "err", err)
			}
			if n > 0 {
				s.nudge()
			}
			if n == dispatchBatch {
				continue
			}
			wctx, wcancel := context.WithTimeout(ctx, time.Second)
			if s.o.Feed != nil && err == nil {
				s.o.Feed.Wait(wctx, cursor)
			} else {
				<-wctx.Done()
			}
			wcancel()
		}
		return nil
	}
}

type hookFilter struct {
	id       string
	filter   events.Filter
	agents   []string
	afterSeq int64
}

// DispatchOnce reads the events after the cursor (at most a batch) and, in
// one transaction, creates their deliveries and moves the cursor past them
// by compare-and-set. It returns the events read and the cursor after.
func (s *Service) DispatchOnce(ctx context.Context) (int, int64, error) {
	db := s.o.DB.WithContext(ctx)
	cursor, err := s.cursor(ctx)
	if err != nil {
		return 0, 0, err
	}
	evs, err := audit.ReadAfter(ctx, s.o.DB, cursor, dispatchBatch)
	var (
		pruned *audit.PrunedError
		ahead  *audit.AheadError
	)
	switch {
	case errors.As(err, &pruned):
		// The dispatcher was stopped for longer than the audit retention:
		// the events in between are gone and cannot be delivered. Say so
		// loudly and go on after them.
		s.o.Logger.Error("webhook: events after the dispatcher's cursor were pruned before they were delivered; it goes on after them",
			"cursor", cursor, "pruned_through", pruned.Through)
		res := db.Exec(`UPDATE webhook_cursor SET seq = ? WHERE name = ? AND seq = ?`, pruned.Through, cursorName, cursor)
		if res.Error != nil {
			return 0, cursor, sqlstore.Translate(res.Error)
		}
		return 0, cursor, errCursorMoved
	case errors.As(err, &ahead):
		// The store's head is below the cursor: the store went back. The
		// dispatcher waits (and says so) rather than deliver positions
		// twice or skip them.
		s.o.Logger.Error("webhook: the feed's head is below the dispatcher's cursor; the store went back, the dispatcher waits",
			"cursor", cursor, "store_head", ahead.Head)
		return 0, cursor, err
	case err != nil || len(evs) == 0:
		return 0, cursor, err
	}
	var hooks []struct {
		ID, Actions, Agents string
		AfterSeq            int64
	}
	if err := db.Raw(`SELECT id, actions, agents, after_seq FROM webhooks WHERE enabled = 1`).Scan(&hooks).Error; err != nil {
		return 0, cursor, sqlstore.Translate(err)
	}
	var counts []struct {
		WebhookID string
		N         int
	}
	if err := db.Raw(`SELECT webhook_id, COUNT(*) AS n FROM webhook_deliveries WHERE state = ? GROUP BY webhook_id`, Pending).
		Scan(&counts).Error; err != nil {
		return 0, cursor, sqlstore.Translate(err)
	}
	pending := map[string]int{}
	for _, c := range counts {
		pending[c.WebhookID] = c.N
	}
	fs := make([]hookFilter, len(hooks))
	for i, h := range hooks {
		fs[i] = hookFilter{id: h.ID, afterSeq: h.AfterSeq}
		_ = json.Unmarshal([]byte(h.Actions), &fs[i].filter.Actions)
		_ = json.Unmarshal([]byte(h.Agents), &fs[i].agents)
	}
	now, err := s.clock(ctx) // next_attempt_at_ms is compared with this clock
	if err != nil {
		return 0, cursor, err
	}
	var rows [][]any
	full := 0
	for _, ev := range evs {
		var body []byte
		for _, f := range fs {
			if ev.Seq <= f.afterSeq || !f.filter.Match(ev) || len(f.agents) > 0 && !slices.Contains(f.agents, ev.Agent) {
				continue
			}
			if body == nil {
				if body, err = json.Marshal(struct {
					Type      string           `json:"type"`
					Timestamp events.Time      `json:"timestamp"`
					Data      events.FeedEvent `json:"data"`
				}{ev.Action, events.Time(ev.At), events.ToFeedEvent(ev, true)}); err != nil {
					return 0, cursor, err
				}
			}
			state, lastErr := Pending, ""
			if pending[f.id] >= s.o.MaxPending {
				state, lastErr = Failed, ErrQueueFull
				full++
			} else {
				pending[f.id]++
			}
			rows = append(rows, []any{f.id, ev.Seq, ev.Action, string(body), state, 0, 0, now, 0, 0, lastErr, now, now})
		}
	}
	next := evs[len(evs)-1].Seq
	_, err = sqlstore.Transact(ctx, s.o.DB, func(tx *gorm.DB) (struct{}, error) {
		for i := 0; i < len(rows); {
			// At most insertBatch rows and insertBytes of bodies a statement
			// (MySQL's max_allowed_packet), at least one row.
			j, size := i, 0
			for j < len(rows) && j-i < insertBatch && (j == i || size+len(rows[j][3].(string)) <= insertBytes) {
				size += len(rows[j][3].(string))
				j++
			}
			part := rows[i:j]
			i = j
			args := make([]any, 0, len(part)*13)
			for _, r := range part {
				args = append(args, r...)
			}
			q := `INSERT INTO webhook_deliveries (webhook_id, seq, action, body, state, attempts, retry_base, next_attempt_at_ms,
				lease_until_ms, last_status, last_error, created_at_ms, updated_at_ms) VALUES ` +
				strings.TrimSuffix(strings.Repeat(`(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?), `, len(part)), ", ")
			if err := tx.Exec(q, args...).Error; err != nil {
				if sqlstore.IsDuplicate(err) {
					return struct{}{}, errCursorMoved
				}
				return struct{}{}, err
			}
		}
		res := tx.Exec(`UPDATE webhook_cursor SET seq = ? WHERE name = ? AND seq = ?`, next, cursorName, cursor)
		if res.Error != nil {
			return struct{}{}, res.Error
		}
		if res.RowsAffected != 1 {
			return struct{}{}, errCursorMoved
		}
		return struct{}{}, nil
	})
	if err != nil {
		if errors.Is(err, errCursorMoved) || sqlstore.IsDuplicate(err) {
			return 0, cursor, errCursorMoved
		}
		return 0, cursor, err
	}
	s.o.Metrics.outcome(ErrQueueFull, full)
	return len(evs), next, nil
}

// cursor reads the dispatcher's position, creating it at the first start:
// the feed's head, or before the oldest webhook's first event.
func (s *Service) cursor(ctx context.Context) (int64, error) {
	db := s.o.DB.WithContext(ctx)
	var cur []int64
	if err := db.Raw(`SELECT seq FROM webhook_cursor WHERE name = ?`, cursorName).Scan(&cur).Error; err != nil {
		return 0, sqlstore.Translate(err)
	}
	if len(cur) == 1 {
		return cur[0], nil
	}
	head, err := audit.Head(ctx, s.o.DB)
	if err != nil {
		return 0, err
	}
	var low struct{ Low *int64 }
	if err := db.Raw(`SELECT MIN(after_seq) AS low FROM webhooks`).Scan(&low).Error; err != nil {
		return 0, sqlstore.Translate(err)
	}
	if low.Low != nil {
		head = min(head, *low.Low)
	}
	if err := db.Exec(`INSERT INTO webhook_cursor (name, seq) VALUES (?, ?)`, cursorName, head).Error; err != nil && !sqlstore.IsDuplicate(err) {
		return 0, sqlstore.Translate(err)
	}
	return 0, errCursorMoved // read it again
}
