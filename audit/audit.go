// Package audit records what changed, who changed it and from which
// instance. Domain changes append their event in the same transaction as
// the change (Append); lease events, which must never slow the lease path,
// go through a Batcher that writes them asynchronously in batches. Prune
// deletes the events older than the retention (PROMPTD_AUDIT_RETENTION).
package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
	"github.com/promptd/promptd/telemetry"
)

// Event is one audit record.
type Event struct {
	ID        int64           `json:"id"`
	At        time.Time       `json:"at"`
	Actor     string          `json:"actor"`
	Instance  string          `json:"instance"`
	Action    string          `json:"action"`
	Agent     string          `json:"-"`
	Env       string          `json:"-"`
	SessionID string          `json:"-"`
	Board     string          `json:"-"`
	Resource  string          `json:"resource"`
	Details   json.RawMessage `json:"details"`
	// TraceID and SpanID name the span the change was made in (the
	// request's, when traced; empty otherwise): webhook deliveries and
	// event-stream sends link to it.
	TraceID string `json:"trace_id"`
	SpanID  string `json:"-"`
}

type actorKey struct{}

// WithActor names who acts in ctx (the token's name, never the token).
func WithActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey{}, actor)
}

// Actor is the actor of ctx, or "system".
func Actor(ctx context.Context) string {
	if a, ok := ctx.Value(actorKey{}).(string); ok && a != "" {
		return a
	}
	return "system"
}

// Log appends events; Instance names this process in every event.
type Log struct {
	Instance string
	Now      func() time.Time
}

// Append writes ev within tx. Details is marshalled from details; the
// trace and span ids are ctx's span's.
func (l Log) Append(ctx context.Context, tx *gorm.DB, ev Event, details any) error {
	if ev.Actor == "" {
		ev.Actor = Actor(ctx)
	}
	traceID, spanID := telemetry.IDs(ctx)
	now := time.Now
	if l.Now != nil {
		now = l.Now
	}
	raw, err := json.Marshal(details)
	if err != nil {
		return fmt.Errorf("audit: details: %w", err)
	}
	_, err = sqlstore.ExecDirect(tx, insertEvent, now().UnixMilli(), ev.Actor, l.Instance, ev.Action, ev.Agent, ev.Env, ev.SessionID,
		ev.Board, ev.Resource, string(raw), traceID, spanID)
	return err
}

// insertEvent is Append's statement: every write's transaction runs it,
// so it goes past GORM's statement builder (sqlstore.ExecDirect).
const insertEvent = `INSERT INTO audit_events (at_ms, actor, instance, action, agent, env, session_id, board, resource, details, trace_id, span_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// Filter selects events; Since is an event id (exclusive), oldest first.
// With Desc, newest first: Since is the id the page ends before (0: the
// newest event).
type Filter struct {
	Agent, Env, SessionID, Action, Board string
	Actor                                string // exact match: a token's name, or "system"
	TraceID                              string // 32 lower-case hex digits
	Since                                int64
	Limit                                int
	Desc                                 bool
}

// List returns events after f.Since matching f, oldest first (before
// f.Since, newest first, with f.Desc), and the cursor of the next page (0
// when there is none).
func List(ctx context.Context, db *gorm.DB, f Filter) ([]Event, int64, error) {
	if f.Limit <= 0 {
		return nil, 0, errors.New("audit: limit must be positive")
	}
	q, order := db.WithContext(ctx).Table("audit_events").Where("id > ?", f.Since), "id"
	if f.Desc {
		q, order = db.WithContext(ctx).Table("audit_events"), "id DESC"
		if f.Since > 0 {
			q = q.Where("id < ?", f.Since)
		}
	}
	for col, v := range map[string]string{"agent": f.Agent, "env": f.Env, "session_id": f.SessionID, "action": f.Action, "board": f.Board,
		"trace_id": f.TraceID, "actor": f.Actor} {
		if v != "" {
			q = q.Where(col+" = ?", v)
		}
	}
	var rows []struct {
		ID                                                              int64
		AtMs                                                            int64
		Actor, Instance, Action, Agent, Env, SessionID, Board, Resource string
		Details, TraceID, SpanID                                        string
	}
	if err := q.Order(order).Limit(f.Limit + 1).Find(&rows).Error; err != nil {
		return nil, 0, sqlstore.Translate(err)
	}
	var next int64
	if len(rows) > f.Limit {
		rows = rows[:f.Limit]
		next = rows[len(rows)-1].ID
	}
	out := make([]Event, len(rows))
	for i, r := range rows {
		out[i] = Event{ID: r.ID, At: time.UnixMilli(r.AtMs).UTC(), Actor: r.Actor, Instance: r.Instance, Action: r.Action,
			Agent: r.Agent, Env: r.Env, SessionID: r.SessionID, Board: r.Board, Resource: r.Resource, Details: json.RawMessage(r.Details),
			TraceID: r.TraceID, SpanID: r.SpanID}
	}
	return out, next, nil
}

// Migrations create the audit table.
func Migrations() []sqlstore.Migration {
	return []sqlstore.Migration{{Component: "audit", Version: 1, Name: "audit_events", Up: func(tx *gorm.DB) error {
		d := sqlstore.Dialect(tx)
		key := sqlstore.IDColumnType(d)
		return sqlstore.CreateTable(tx, sqlstore.Table{
			Name: "audit_events",
			Columns: []string{
				sqlstore.AutoID(d),
				"at_ms BIGINT NOT NULL",
				"actor VARCHAR(256) NOT NULL",
				"instance VARCHAR(256) NOT NULL",
				"action VARCHAR(64) NOT NULL",
				"agent " + key + " NOT NULL DEFAULT ''",
				"env " + key + " NOT NULL DEFAULT ''",
				"session_id " + key + " NOT NULL DEFAULT ''",
				"resource VARCHAR(512) NOT NULL",
				"details " + sqlstore.LongText(d) + " NOT NULL",
			},
			Indexes: map[string]string{
				"audit_events_agent":   "agent, id",
				"audit_events_session": "session_id, id",
				"audit_events_action":  "action, id",
			},
		})
	}}, {Component: "audit", Version: 2, Name: "audit_events.board and audit_events.seq, the change feed's commit-order position", Up: addFeedColumns},
		{Component: "audit", Version: 3, Name: "audit_events.trace_id and span_id, the span of the change", Up: addTraceColumns},
		{Component: "audit", Version: 4, Name: "audit_events_board: a board's events in feed order", Up: addBoardIndex},
		{Component: "audit", Version: 5, Name: "audit_events_actor, the actor filter of GET /v1/audit", Up: addActorIndex},
		{Component: "audit", Version: 6, Name: "audit_feed: the feed's head, which never decreases, and the highest position pruned", Up: addFeedMarks}}
}

// addBoardIndex lets a board's change feed (and the console's board page)
// read that board's events in feed order without scanning the others.
func addBoardIndex(tx *gorm.DB) error {
	if tx.Migrator().HasIndex("audit_events", "audit_events_board") {
		return nil
	}
	return tx.Exec(`CREATE INDEX audit_events_board ON audit_events (board, seq)`).Error
}

// addActorIndex indexes the events by actor in id order (the filter
// pages along it in either order). Created only when missing.
func addActorIndex(tx *gorm.DB) error {
	if tx.Migrator().HasIndex("audit_events", "audit_events_actor") {
		return nil
	}
	return tx.Exec(`CREATE INDEX audit_events_actor ON audit_events (actor, id)`).Error
}

// addTraceColumns adds the trace and span ids of the span an event was
// written in (” when untraced) and an index to find a trace's events.
// Guarded like addFeedColumns, so it can run again after a partial run.
func addTraceColumns(tx *gorm.DB) error {
	if !tx.Migrator().HasColumn("audit_events", "trace_id") {
		if err := tx.Exec(`ALTER TABLE audit_events ADD COLUMN trace_id VARCHAR(32) NOT NULL DEFAULT ''`).Error; err != nil {
			return err
		}
	}
	if !tx.Migrator().HasColumn("audit_events", "span_id") {
		if err := tx.Exec(`ALTER TABLE audit_events ADD COLUMN span_id VARCHAR(16) NOT NULL DEFAULT ''`).Error; err != nil {
			return err
		}
	}
	if !tx.Migrator().HasIndex("audit_events", "audit_events_trace") {
		if err := tx.Exec(`CREATE INDEX audit_events_trace ON audit_events (trace_id, id)`).Error; err != nil {
			return err
		}
	}
	return nil
}

// addFeedColumns adds the board an event names and seq, its position in
// the change feed (NULL until the sequencer stamps it after commit; unique,
// so two sequencers can never give one position twice). Columns are added
// only when missing, so on MySQL (which commits each ALTER at once) a
// migration that failed after them can run again.
func addFeedColumns(tx *gorm.DB) error {
	d := sqlstore.Dialect(tx)
	if !tx.Migrator().HasColumn("audit_events", "board") {
		if err := tx.Exec(`ALTER TABLE audit_events ADD COLUMN board ` + sqlstore.IDColumnType(d) + ` NOT NULL DEFAULT ''`).Error; err != nil {
			return err
		}
	}
	if !tx.Migrator().HasColumn("audit_events", "seq") {
		if err := tx.Exec(`ALTER TABLE audit_events ADD COLUMN seq BIGINT NULL`).Error; err != nil {
			return err
		}
	}
	if !tx.Migrator().HasIndex("audit_events", "audit_events_seq") {
		if err := tx.Exec(`CREATE UNIQUE INDEX audit_events_seq ON audit_events (seq)`).Error; err != nil {
			return err
		}
	}
	return nil
}
