package session

import (
	"encoding/json"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
	"github.com/promptd/promptd/wire"
)

// States of a session.
const (
	Open   = "open"
	Closed = "closed"
)

// Session is a conversation's shared context as the API shows it.
type Session struct {
	SessionID     string          `json:"session_id"`
	Agent         string          `json:"agent"`
	Env           string          `json:"env"`
	UserID        string          `json:"user_id"`
	PinnedVersion int             `json:"pinned_version"`
	Revision      int64           `json:"revision"`
	State         string          `json:"state"`
	Fence         int64           `json:"fence"`
	Lease         *LeaseInfo      `json:"lease"`
	Metadata      json.RawMessage `json:"metadata"`
	IdleTTLMs     int64           `json:"idle_ttl_ms"`
	CreatedAt     time.Time       `json:"created_at"`
	UpdatedAt     time.Time       `json:"updated_at"`
	TurnCount     int64           `json:"turn_count"`
	Turns         []Turn          `json:"turns,omitempty"`
	NextSince     *int64          `json:"next_since,omitempty"`
	StateKeys     []string        `json:"state_keys,omitempty"`
}

// LeaseInfo describes who holds a session's lease (never its token).
type LeaseInfo struct {
	Holder    string    `json:"holder"`
	Fence     int64     `json:"fence"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Turn is one message of a session, in the shape the API shows it
// (package wire: the server and the Go client share it).
type Turn = wire.Turn

type sessionRow struct {
	SessionID     string
	Agent         string
	Env           string
	UserID        string
	PinnedVersion int
	State         string
	Revision      int64
	Fence         int64
	Turns         int64
	SizeBytes     int64 // turns and state entries, as the limits count them
	StateKeys     int64
	Metadata      string
	IdleTtlMs     int64
	CreatedAtMs   int64
	UpdatedAtMs   int64
	ClosedAtMs    *int64
}

const sessionCols = `session_id, agent, env, user_id, pinned_version, state, revision, fence, turns, size_bytes, state_keys,
	metadata, idle_ttl_ms, created_at_ms, updated_at_ms, closed_at_ms`

func (r *sessionRow) session() *Session {
	return &Session{SessionID: r.SessionID, Agent: r.Agent, Env: r.Env, UserID: r.UserID, PinnedVersion: r.PinnedVersion,
		Revision: r.Revision, State: r.State, Fence: r.Fence, Metadata: json.RawMessage(r.Metadata), IdleTTLMs: r.IdleTtlMs,
		CreatedAt: time.UnixMilli(r.CreatedAtMs).UTC(), UpdatedAt: time.UnixMilli(r.UpdatedAtMs).UTC(), TurnCount: r.Turns}
}

func readSession(db *gorm.DB, id string) (*sessionRow, error) {
	return querySession(db, `SELECT `+sessionCols+` FROM sessions WHERE session_id = ?`, id)
}

// readSessionLatest is readSession as a locking read (MySQL: FOR UPDATE),
// for use inside a write's transaction; SQLite has one writer.
func readSessionLatest(tx *gorm.DB, id string) (*sessionRow, error) {
	if sqlstore.Dialect(tx) != sqlstore.MySQL {
		return readSession(tx, id)
	}
	return querySession(tx, `SELECT `+sessionCols+` FROM sessions WHERE session_id = ? FOR UPDATE`, id)
}

// querySession reads one session row, scanned by position (dest) past
// GORM's reflection: the lease and write paths read it per request.
func querySession(db *gorm.DB, q, id string) (*sessionRow, error) {
	rows, err := sqlstore.QueryDirect(db, q, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, err
		}
		return nil, ErrNotFound
	}
	var r sessionRow
	if err := rows.Scan(r.dest()...); err != nil {
		return nil, err
	}
	return &r, rows.Close()
}

// dest is r's fields in sessionCols' order, for rows.Scan.
func (r *sessionRow) dest() []any {
	return []any{&r.SessionID, &r.Agent, &r.Env, &r.UserID, &r.PinnedVersion, &r.State, &r.Revision, &r.Fence, &r.Turns,
		&r.SizeBytes, &r.StateKeys, &r.Metadata, &r.IdleTtlMs, &r.CreatedAtMs, &r.UpdatedAtMs, &r.ClosedAtMs}
}

type turnRow struct {
	Seq         int64
	Role        string
	Content     string
	Name        string
	ToolCallID  string
	ToolCalls   *string
	Metadata    *string
	CreatedAtMs int64
}

func (r turnRow) turn() Turn {
	t := Turn{Seq: r.Seq, TurnInput: TurnInput{Role: r.Role, Content: json.RawMessage(r.Content), Name: r.Name, ToolCallID: r.ToolCallID},
		CreatedAt: wire.Time(time.UnixMilli(r.CreatedAtMs).UTC())}
	if r.ToolCalls != nil {
		t.ToolCalls = json.RawMessage(*r.ToolCalls)
	}
	if r.Metadata != nil {
		t.Metadata = json.RawMessage(*r.Metadata)
	}
	return t
}
