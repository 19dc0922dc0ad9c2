package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/events"
	"github.com/promptd/promptd/sqlstore"
	"github.com/promptd/promptd/wire"
)

// WriteCondition is what every write carries: the session revision it
// read and, when it holds the lease, its fence.
type WriteCondition struct {
	ExpectedRevision *int64
	Fence            *int64
}

// TurnInput is one turn to append.
type TurnInput = wire.TurnInput

// Appended is the answer to an append: the session's new revision and
// the turns' seqs.
type Appended = wire.Appended

func validateTurns(turns []TurnInput) error {
	if len(turns) == 0 || len(turns) > MaxTurns {
		return invalidf("turns", "1..%d turns", MaxTurns)
	}
	for i, t := range turns {
		f := fmt.Sprintf("turns[%d]", i)
		switch t.Role {
		case "user", "assistant", "tool", "system":
		default:
			return invalidf(f+".role", `role must be "user", "assistant", "tool" or "system"`)
		}
		size := len(t.Content) + len(t.Name) + len(t.ToolCallID) + len(t.ToolCalls) + len(t.Metadata)
		if size > MaxTurnBytes {
			return invalidf(f, "a turn is at most %d bytes", MaxTurnBytes)
		}
		if len(t.Content) == 0 || !json.Valid(t.Content) {
			return invalidf(f+".content", "content is required (a string, an array of parts, or null)")
		}
		if c := t.Content[0]; c != '"' && c != '[' && string(t.Content) != "null" {
			return invalidf(f+".content", "content must be a string, an array of parts, or null")
		}
		if len(t.ToolCalls) > 0 && string(t.ToolCalls) != "null" && (t.Role != "assistant" || t.ToolCalls[0] != '[') {
			return invalidf(f+".tool_calls", "tool_calls is an array, on assistant turns only")
		}
		if t.Role == "tool" && t.ToolCallID == "" {
			return invalidf(f+".tool_call_id", "tool turns answer a tool call: tool_call_id is required")
		}
		if len(t.Metadata) > 0 && string(t.Metadata) != "null" && t.Metadata[0] != '{' {
			return invalidf(f+".metadata", "metadata must be an object")
		}
		if len(t.Name) > 256 || len(t.ToolCallID) > 256 {
			return invalidf(f, "name and tool_call_id are at most 256 bytes")
		}
	}
	return nil
}

func checkCondition(c WriteCondition) error {
	if c.ExpectedRevision == nil {
		return invalidf("expected_revision", "expected_revision is required")
	}
	if *c.ExpectedRevision < 0 {
		return invalidf("expected_revision", "expected_revision must be >= 0")
	}
	if c.Fence != nil && *c.Fence <= 0 {
		return invalidf("fence", "fence must be positive")
	}
	return nil
}

// appendTouch is the append's conditional update, limits included
// (g); it returns the session's new turn count in the same round trip
// (LAST_INSERT_ID on MySQL, RETURNING on SQLite), so the seqs need no
// second read.
func appendTouch(tx *gorm.DB, id string, c WriteCondition, fence int64, g growth, ms int64) (int64, error) {
	if sqlstore.Dialect(tx) == sqlstore.MySQL {
		q, args := touchQuery(id, c, fence, g, `revision = revision + 1, turns = LAST_INSERT_ID(turns + ?), updated_at_ms = ?`, g.turns, ms)
		res, err := sqlstore.ExecDirect(tx, q, args...)
		if err != nil {
			return 0, err
		}
		if rows, _ := res.RowsAffected(); rows != 1 {
			return 0, explainMiss(tx, id, c, fence, g)
		}
		return res.LastInsertId()
	}
	q, args := touchQuery(id, c, fence, g, `revision = revision + 1, turns = turns + ?, updated_at_ms = ?`, g.turns, ms)
	rows, err := sqlstore.QueryDirect(tx, q+` RETURNING turns`, args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return 0, err
		}
		_ = rows.Close() // before the explaining reads, on the same connection
		return 0, explainMiss(tx, id, c, fence, g)
	}
	var turns int64
	if err := rows.Scan(&turns); err != nil {
		return 0, err
	}
	return turns, rows.Close()
}

// Append adds turns in one transaction: the conditional update of the
// session row (revision, fence, open) and the insert of the turns with
// the next seqs.
func (s *Service) Append(ctx context.Context, id string, c WriteCondition, turns []TurnInput, then ...sqlstore.Then[*Appended]) (*Appended, error) {
	if err := validID("session_id", id); err != nil {
		return nil, err
	}
	if err := checkCondition(c); err != nil {
		return nil, err
	}
	if err := validateTurns(turns); err != nil {
		return nil, err
	}
	ms := s.o.Now().UnixMilli()
	g := growth{turns: int64(len(turns)), lim: s.limits()}
	for _, t := range turns {
		g.bytes += turnBytes(t)
	}
	out, err := guardedWrite(ctx, s, id, c, func(tx *gorm.DB, fence int64) (*Appended, error) {
		total, err := appendTouch(tx, id, c, fence, g, ms)
		if err != nil {
			return nil, err
		}
		first := total - int64(len(turns)) + 1
		out := &Appended{Revision: *c.ExpectedRevision + 1, Seqs: make([]int64, len(turns))}
		args := make([]any, 0, 9*len(turns))
		for i, t := range turns {
			out.Seqs[i] = first + int64(i)
			args = append(args, id, out.Seqs[i], t.Role, string(t.Content), t.Name, t.ToolCallID, nullJSON(t.ToolCalls), nullJSON(t.Metadata), ms)
		}
		_, err = sqlstore.ExecDirect(tx, insertTurns(len(turns)), args...)
		return out, err
	}, then)
	if err != nil {
		return nil, s.reject(ctx, id, err)
	}
	return out, nil
}

// insertTurns is the INSERT of n turns; the one-turn statement, the
// common append, is built once.
func insertTurns(n int) string {
	if n == 1 {
		return insertOneTurn
	}
	return insertTurnsPrefix + strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, ?), ", n), ", ")
}

const (
	insertTurnsPrefix = `INSERT INTO session_turns (session_id, seq, role, content, name, tool_call_id, tool_calls, metadata, created_at_ms) VALUES `
	insertOneTurn     = insertTurnsPrefix + `(?, ?, ?, ?, ?, ?, ?, ?, ?)`
)

func nullJSON(r json.RawMessage) any {
	if len(r) == 0 || string(r) == "null" {
		return nil
	}
	return string(r)
}

// reject records write.rejected (asynchronously) for the rule's refusals.
func (s *Service) reject(ctx context.Context, id string, err error) error {
	var rc *RevisionConflict
	var sf *StaleFence
	var lh *LeaseHeld
	switch {
	case errors.As(err, &rc):
		s.rejected(ctx, id, "revision_conflict", err)
	case errors.As(err, &sf):
		s.rejected(ctx, id, "stale_fence", err)
	case errors.As(err, &lh):
		if lh.Holder == "" { // lost the race with a grant: say who holds it now
			if info, herr := s.o.Locker.Holder(ctx, s.key(id)); herr == nil {
				lh.Holder, lh.ExpiresAt = info.Holder, info.ExpiresAt
			}
		}
		s.rejected(ctx, id, "lease_held", err)
	}
	return err
}

// StateEntry is one blackboard entry.
type StateEntry struct {
	Value    json.RawMessage `json:"value"`
	Revision int64           `json:"revision"`
}

// PutState writes a blackboard entry with a per-key compare-and-set
// (expected 0 creates) under the session's fence rule. A new entry counts
// against the session's state-key limit, its key and value against the
// byte limit; an update counts the change of the value's size, which is
// read at the expected revision in the write's transaction (the entry's
// own revision condition makes that read the one the write replaces).
func (s *Service) PutState(ctx context.Context, id, key string, expected int64, fence *int64, value json.RawMessage, then ...sqlstore.Then[int64]) (int64, error) {
	if err := validID("session_id", id); err != nil {
		return 0, err
	}
	if err := validID("key", key); err != nil {
		return 0, err
	}
	if expected < 0 {
		return 0, invalidf("expected_revision", "expected_revision must be >= 0")
	}
	if len(value) == 0 || len(value) > MaxValue || !json.Valid(value) {
		return 0, invalidf("value", "value must be JSON up to %d bytes", MaxValue)
	}
	c := WriteCondition{Fence: fence}
	if err := checkCondition(WriteCondition{ExpectedRevision: &expected, Fence: fence}); err != nil {
		return 0, err
	}
	ms := s.o.Now().UnixMilli()
	rev, err := guardedWrite(ctx, s, id, c, func(tx *gorm.DB, f int64) (int64, error) {
		g := growth{keys: 1, bytes: stateBytes(key, value), lim: s.limits()}
		if expected == 0 && stateRevision(tx, id, key) > 0 {
			g = growth{} // taken: the insert below is the conflict, not a limit
		}
		if expected > 0 {
			old, found, err := storedValueBytes(tx, id, key, expected)
			if err != nil {
				return 0, err
			}
			// Not at the expected revision: the session's own condition
			// still speaks first (closed, fence), then the conflict.
			g = growth{lim: g.lim}
			if found {
				g.bytes = int64(len(value)) - old
			}
		}
		if err := s.conditionalTouch(tx, id, c, f, g, `updated_at_ms = ?`, ms); err != nil {
			return 0, err
		}
		if expected == 0 {
			err := tx.Exec(`INSERT INTO session_state (session_id, state_key, value, revision, updated_at_ms) VALUES (?, ?, ?, 1, ?)`,
				id, key, string(value), ms).Error
			if sqlstore.IsDuplicate(err) {
				return 0, &RevisionConflict{Current: stateRevision(tx, id, key)}
			}
			return 1, err
		}
		res := tx.Exec(`UPDATE session_state SET value = ?, revision = revision + 1, updated_at_ms = ?
			WHERE session_id = ? AND state_key = ? AND revision = ?`, string(value), ms, id, key, expected)
		if res.Error != nil {
			return 0, res.Error
		}
		if res.RowsAffected != 1 {
			return 0, &RevisionConflict{Current: stateRevision(tx, id, key)}
		}
		return expected + 1, nil
	}, then)
	if err != nil {
		return 0, s.reject(ctx, id, err)
	}
	return rev, nil
}

func stateRevision(tx *gorm.DB, id, key string) int64 {
	var rev int64
	tx.Raw(`SELECT revision FROM session_state WHERE session_id = ? AND state_key = ?`, id, key).Scan(&rev)
	return rev
}

// Close closes a session under the write rule; it counts as a revision.
// With the lease's token (the closer holds the lease) the lease is freed
// too, by token as always; without it a held lease runs to its TTL, but a
// closed session accepts no write and grants no lease either way.
func (s *Service) Close(ctx context.Context, id string, c WriteCondition, leaseToken string) (*Session, error) {
	if err := validID("session_id", id); err != nil {
		return nil, err
	}
	if err := checkCondition(c); err != nil {
		return nil, err
	}
	ms := s.o.Now().UnixMilli()
	out, err := guardedWrite(ctx, s, id, c, func(tx *gorm.DB, fence int64) (*Session, error) {
		if err := s.conditionalTouch(tx, id, c, fence, growth{}, `state = 'closed', revision = revision + 1, updated_at_ms = ?, closed_at_ms = ?`, ms, ms); err != nil {
			return nil, err
		}
		row, err := readSession(tx, id)
		if err != nil {
			return nil, err
		}
		return row.session(), s.audit.Append(ctx, tx, audit.Event{Action: "session.closed", Agent: row.Agent, Env: row.Env,
			SessionID: id, Resource: "sessions/" + id}, map[string]any{"revision": row.Revision})
	}, nil)
	if err != nil {
		return nil, s.reject(ctx, id, err)
	}
	s.pins.drop(id)
	s.o.Bus.Publish(ctx, events.Event{Kind: EventKind, ID: id, Revision: out.Revision})
	if leaseToken != "" {
		// Best effort: the close is committed; a token that is no longer
		// current frees nothing.
		_ = s.ReleaseLease(context.WithoutCancel(ctx), id, leaseToken)
	}
	return out, nil
}
