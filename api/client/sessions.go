package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/promptd/promptd/wire"
)

// The session shapes are promptd's wire types (package wire): the server
// encodes the same types.
type (
	// SessionSummary is a session as ListSessions lists it.
	SessionSummary = wire.SessionSummary
	// Session is a conversation pinned to a version, with its write
	// revision and lease fence, as CreateSession and CloseSession answer it.
	Session = wire.Session
	// SessionDetail is a session with a page of its turns and the names of
	// its state entries, as GetSession answers it.
	SessionDetail = wire.SessionDetail
	// LeaseInfo says who holds a session's lease (never its token).
	LeaseInfo = wire.LeaseInfo
	// Turn is one turn of a session, with its seq and time.
	Turn = wire.Turn
	// TurnInput is a turn to append. Content is any JSON (usually a
	// string).
	TurnInput = wire.TurnInput
	// Appended is the answer to an append: the session's new revision and
	// the turns' seqs.
	Appended = wire.Appended
)

// TextTurn is a turn whose content is the string text.
func TextTurn(role, text string) TurnInput { return wire.TextTurn(role, text) }

// CreateSessionRequest opens a session; SessionID "" lets promptd pick one.
type CreateSessionRequest struct {
	SessionID string          `json:"session_id,omitempty"`
	Agent     string          `json:"agent"`
	Env       string          `json:"env"`
	UserID    string          `json:"user_id,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	IdleTTLMs int64           `json:"idle_ttl_ms,omitempty"`
}

// CreateSession opens a session pinned to the version resolved for its
// caller now (idempotent). The same id for another agent, env or user, or
// a closed one: ErrSessionExists.
func (c *Client) CreateSession(ctx context.Context, req CreateSessionRequest) (*Session, error) {
	var s Session
	_, err := c.do(ctx, call{method: http.MethodPost, path: "/v1/sessions", body: req, idempotent: true}, &s)
	return ret(&s, err)
}

func sessionPath(id string) string { return "/v1/sessions/" + seg(id) }

// GetSession reads a session with up to limit turns after seq since
// (limit 0: the server's default).
func (c *Client) GetSession(ctx context.Context, id string, since int64, limit int) (*SessionDetail, error) {
	q := url.Values{}
	if since > 0 {
		q.Set("since", strconv.FormatInt(since, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var s SessionDetail
	_, err := c.do(ctx, call{method: http.MethodGet, path: sessionPath(id), query: q}, &s)
	return ret(&s, err)
}

// WriteCondition is the condition of a session write: the revision it is
// based on and, when the writer holds the session lease, its fence. A
// write with a fence that is no longer current is ErrStaleFence
// (CurrentFence); without a fence while a lease is held, ErrLeaseHeld.
type WriteCondition struct {
	ExpectedRevision int64  `json:"expected_revision"`
	Fence            *int64 `json:"fence,omitempty"`
}

// Fenced is the condition of a write by the holder of fence.
func Fenced(expectedRevision, fence int64) WriteCondition {
	return WriteCondition{ExpectedRevision: expectedRevision, Fence: &fence}
}

// AppendTurns appends 1..100 turns under cond (idempotent).
func (c *Client) AppendTurns(ctx context.Context, id string, cond WriteCondition, turns ...TurnInput) (*Appended, error) {
	body := struct {
		WriteCondition
		Turns []TurnInput `json:"turns"`
	}{cond, turns}
	var a Appended
	_, err := c.do(ctx, call{method: http.MethodPost, path: sessionPath(id) + "/turns", body: body, idempotent: true}, &a)
	return ret(&a, err)
}

// StateEntry is one blackboard entry.
type StateEntry struct {
	Value    json.RawMessage `json:"value"`
	Revision int64           `json:"revision"`
}

// PutState writes a blackboard entry (idempotent): cond.ExpectedRevision
// is the entry's revision (0 creates it). It returns the entry's new
// revision.
func (c *Client) PutState(ctx context.Context, id, key string, value any, cond WriteCondition) (int64, error) {
	body := struct {
		Value any `json:"value"`
		WriteCondition
	}{value, cond}
	var out struct {
		Revision int64 `json:"revision"`
	}
	_, err := c.do(ctx, call{method: http.MethodPut, path: sessionPath(id) + "/state/" + seg(key), body: body, idempotent: true}, &out)
	return out.Revision, err
}

// GetState reads every blackboard entry of a session.
func (c *Client) GetState(ctx context.Context, id string) (map[string]StateEntry, error) {
	var out map[string]StateEntry
	_, err := c.do(ctx, call{method: http.MethodGet, path: sessionPath(id) + "/state"}, &out)
	return out, err
}

// CloseSession closes a session under cond and frees its lease.
func (c *Client) CloseSession(ctx context.Context, id string, cond WriteCondition) (*Session, error) {
	var s Session
	_, err := c.do(ctx, call{method: http.MethodPost, path: sessionPath(id) + "/close", body: cond}, &s)
	return ret(&s, err)
}

// Lease modes.
const (
	ModeReject  = "reject"
	ModeWait    = "wait"
	ModePreempt = "preempt"
)

// LeaseRequest asks for a session lease. TTL is 100 ms..60 s (0: 5 s);
// Wait (mode "wait") up to 30 s; Token re-enters a lease already held.
type LeaseRequest struct {
	Holder string
	TTL    time.Duration
	Wait   time.Duration
	Mode   string // ModeReject (default), ModeWait or ModePreempt
	Token  string
}

// SessionLease is a granted session lease. Token renews and releases it;
// Fence goes with every write made under it.
type SessionLease struct {
	LeaseID   string    `json:"lease_id"`
	Token     string    `json:"token"`
	Fence     int64     `json:"fence"`
	ExpiresAt time.Time `json:"expires_at"`
}

// AcquireSessionLease takes a session's lease: held by another, it is
// ErrLeaseHeld (Holder, ExpiresAt) unless req.Mode waits or preempts.
func (c *Client) AcquireSessionLease(ctx context.Context, id string, req LeaseRequest) (*SessionLease, error) {
	body := map[string]any{"holder": req.Holder}
	if req.TTL > 0 {
		body["ttl_ms"] = req.TTL.Milliseconds()
	}
	if req.Wait > 0 {
		body["wait_ms"] = req.Wait.Milliseconds()
	}
	if req.Mode != "" {
		body["mode"] = req.Mode
	}
	if req.Token != "" {
		body["token"] = req.Token
	}
	var l SessionLease
	_, err := c.do(ctx, call{method: http.MethodPost, path: sessionPath(id) + "/lease", body: body}, &l)
	return ret(&l, err)
}

// RenewSessionLease extends a session lease to ttl from now; a token that
// is no longer current is ErrLeaseLost.
func (c *Client) RenewSessionLease(ctx context.Context, id, token string, ttl time.Duration) (time.Time, error) {
	return c.renew(ctx, sessionPath(id)+"/lease/renew", token, ttl)
}

// ReleaseSessionLease frees a session lease (or lowers its hold count);
// another holder's lease is never touched (ErrLeaseLost).
func (c *Client) ReleaseSessionLease(ctx context.Context, id, token string) error {
	_, err := c.do(ctx, call{method: http.MethodDelete, path: sessionPath(id) + "/lease",
		header: map[string]string{"Lease-Token": token}}, nil)
	return err
}

func (c *Client) renew(ctx context.Context, path, token string, ttl time.Duration) (time.Time, error) {
	var out struct {
		ExpiresAt time.Time `json:"expires_at"`
	}
	_, err := c.do(ctx, call{method: http.MethodPost, path: path, body: map[string]int64{"ttl_ms": ttl.Milliseconds()},
		header: map[string]string{"Lease-Token": token}}, &out)
	return out.ExpiresAt, err
}
