package wire

import "encoding/json"

// States of a session.
const (
	SessionOpen   = "open"
	SessionClosed = "closed"
)

// LeaseInfo says who holds a session's lease (never its token): schema
// LeaseInfo.
type LeaseInfo struct {
	Holder    string `json:"holder"`
	Fence     int64  `json:"fence"`
	ExpiresAt Time   `json:"expires_at"`
}

// SessionSummary is a session as GET /v1/sessions lists it: schema
// SessionSummary. Lease is set while it is held.
type SessionSummary struct {
	SessionID     string     `json:"session_id"`
	Agent         string     `json:"agent"`
	Env           string     `json:"env"`
	UserID        *string    `json:"user_id"`
	PinnedVersion int        `json:"pinned_version"`
	Revision      int64      `json:"revision"`
	State         string     `json:"state"` // SessionOpen or SessionClosed
	Fence         int64      `json:"fence"`
	Lease         *LeaseInfo `json:"lease"`
	TurnCount     int64      `json:"turn_count"`
	CreatedAt     Time       `json:"created_at"`
	UpdatedAt     Time       `json:"updated_at"`
}

// Session is a session as its create and close answer it: schema
// Session.
type Session struct {
	SessionSummary
	Metadata  json.RawMessage `json:"metadata"`
	IdleTTLMs int64           `json:"idle_ttl_ms"`
}

// SessionDetail is a session as GET /v1/sessions/{id} answers it, with a
// page of its turns, the since of the next page (nil at the end) and the
// names of its state entries: schema SessionDetail.
type SessionDetail struct {
	Session
	Turns     []Turn   `json:"turns"`
	NextSince *int64   `json:"next_since"`
	StateKeys []string `json:"state_keys"`
}

// TurnInput is a turn to append: schema TurnInput. Content is any JSON
// (usually a string); ToolCallID is required on tool turns, ToolCalls
// allowed on assistant turns only.
type TurnInput struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	ToolCalls  json.RawMessage `json:"tool_calls,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
}

// TextTurn is a turn whose content is the string text.
func TextTurn(role, text string) TurnInput {
	b, _ := json.Marshal(text) // a string always encodes
	return TurnInput{Role: role, Content: b}
}

// Turn is one turn of a session: the turn as appended, with its seq and
// the time it was appended (schema Turn).
type Turn struct {
	Seq int64 `json:"seq"`
	TurnInput
	CreatedAt Time `json:"created_at"`
}

// Appended is the answer to an append: the session's new revision and the
// appended turns' seqs (schema Appended).
type Appended struct {
	Revision int64   `json:"revision"`
	Seqs     []int64 `json:"seqs"`
}
