package api

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/session"
)

// sessionResponse is a session as POST /v1/sessions and close answer it.
type sessionResponse struct {
	sessionCore
	Metadata  json.RawMessage `json:"metadata"`
	IdleTTLMs int64           `json:"idle_ttl_ms"`
	sessionCounts
}

// sessionCore and sessionCounts are the members a session has in every
// answer, the list's summaries (GET /v1/sessions) included.
type sessionCore struct {
	SessionID     string     `json:"session_id"`
	Agent         string     `json:"agent"`
	Env           string     `json:"env"`
	UserID        *string    `json:"user_id"`
	PinnedVersion int        `json:"pinned_version"`
	Revision      int64      `json:"revision"`
	State         string     `json:"state"`
	Fence         int64      `json:"fence"`
	Lease         *leaseInfo `json:"lease"`
}

type sessionCounts struct {
	TurnCount int64     `json:"turn_count"`
	CreatedAt timestamp `json:"created_at"`
	UpdatedAt timestamp `json:"updated_at"`
}

// sessionDetail is a session as GET /v1/sessions/{id} answers it: with a
// page of its turns and the names of its state entries.
type sessionDetail struct {
	sessionResponse
	Turns     []turnResponse `json:"turns"`
	NextSince *int64         `json:"next_since"`
	StateKeys []string       `json:"state_keys"`
}

// leaseInfo says who holds a session's lease (never its token).
type leaseInfo struct {
	Holder    string    `json:"holder"`
	Fence     int64     `json:"fence"`
	ExpiresAt timestamp `json:"expires_at"`
}

// turnResponse is one turn of a session.
type turnResponse struct {
	Seq        int64           `json:"seq"`
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	ToolCalls  json.RawMessage `json:"tool_calls,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	CreatedAt  timestamp       `json:"created_at"`
}

func sessionBody(s *session.Session) sessionResponse {
	out := sessionResponse{sessionCore: sessionCore{SessionID: s.SessionID, Agent: s.Agent, Env: s.Env,
		PinnedVersion: s.PinnedVersion, Revision: s.Revision, State: s.State, Fence: s.Fence},
		Metadata: s.Metadata, IdleTTLMs: s.IdleTTLMs,
		sessionCounts: sessionCounts{TurnCount: s.TurnCount, CreatedAt: timestamp(s.CreatedAt), UpdatedAt: timestamp(s.UpdatedAt)}}
	if s.UserID != "" {
		u := s.UserID
		out.UserID = &u
	}
	if len(out.Metadata) == 0 {
		out.Metadata = json.RawMessage("{}")
	}
	if s.Lease != nil {
		out.Lease = &leaseInfo{Holder: s.Lease.Holder, Fence: s.Lease.Fence, ExpiresAt: timestamp(s.Lease.ExpiresAt)}
	}
	return out
}

func sessionEntity(s *session.Session) any { return sessionBody(s) }

// sessions is the session service, or 500 internal when none is wired.
func (s *Server) sessions() (*session.Service, error) {
	if s.cfg.Sessions == nil {
		return nil, errNoService
	}
	return s.cfg.Sessions, nil
}

// sessionPath reads the session id path parameter.
func sessionPath(c echo.Context) (string, error) { return pathIDAs(c, "id", "session_id") }

// sessionTarget is the prelude of every /v1/sessions/{id} handler: the
// session service and the validated session id.
func (s *Server) sessionTarget(c echo.Context) (*session.Service, string, error) {
	ss, err := s.sessions()
	if err != nil {
		return nil, "", err
	}
	id, err := sessionPath(c)
	return ss, id, err
}

// createSessionRequest is the body of POST /v1/sessions.
type createSessionRequest struct {
	SessionID *string         `json:"session_id"`
	Agent     string          `json:"agent"`
	Env       string          `json:"env"`
	UserID    *string         `json:"user_id"`
	Metadata  json.RawMessage `json:"metadata"`
	IdleTTLMs *int64          `json:"idle_ttl_ms"`

	idleTTL time.Duration
}

func (r *createSessionRequest) validate() (err error) {
	if r.SessionID != nil && *r.SessionID == "" {
		return Errorf(CodeInvalidID, "session_id: empty; leave it out to have one generated").With("field", "session_id")
	}
	if r.UserID != nil && *r.UserID == "" {
		return Errorf(CodeInvalidID, "user_id: empty; leave it out for a session without a user").With("field", "user_id")
	}
	if len(r.Metadata) > 0 && string(r.Metadata) != "null" && !isObject(r.Metadata) {
		return invalidField("metadata", "metadata must be a JSON object")
	}
	r.idleTTL, err = msDuration(r.IdleTTLMs, "idle_ttl_ms", session.MinIdleTTL, session.MaxIdleTTL, 0)
	return err
}

// handleCreateSession: POST /v1/sessions (runtime, Idempotency-Key). The
// session is pinned to the version resolved for its caller now. 201 with
// the session at revision 0; the same id with the same agent, env and
// user: 200 with it; otherwise, or closed: 409 session_exists.
func (s *Server) handleCreateSession(c echo.Context) error {
	ss, err := s.sessions()
	if err != nil {
		return err
	}
	var req createSessionRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if err := s.allow(c, req.Agent, req.Env, ""); err != nil {
		return err
	}
	sess, created, err := ss.Create(c.Request().Context(), session.CreateInput{SessionID: deref(req.SessionID), Agent: req.Agent, Env: req.Env,
		UserID: deref(req.UserID), Metadata: req.Metadata, IdleTTL: req.idleTTL}, recordAnswer(s, c, http.StatusCreated, sessionEntity))
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return s.send(c, status, sessionBody(sess))
}

// handleGetSession: GET /v1/sessions/{id}?since=&limit=: the session, its
// turns after seq since (oldest first, at most limit: default 50, 1..500,
// and at most PROMPTD_SESSION_PAGE_BYTES of turns but at least one;
// next_since continues whenever a page was cut, by count or by bytes), its
// lease holder or null, and its state keys.
func (s *Server) handleGetSession(c echo.Context) error {
	ss, id, err := s.sessionTarget(c)
	if err != nil {
		return err
	}
	since, err := queryInt(c, "since", 0)
	if err != nil {
		return err
	}
	page, err := pageOf(c)
	if err != nil {
		return err
	}
	if page.Cursor != "" {
		return invalidField("cursor", "sessions page their turns with since=<seq>, not a cursor")
	}
	sess, err := ss.Get(c.Request().Context(), id, since, page.Limit)
	if err != nil {
		return err
	}
	out := sessionDetail{sessionResponse: sessionBody(sess), Turns: make([]turnResponse, len(sess.Turns)),
		NextSince: sess.NextSince, StateKeys: sess.StateKeys}
	for i, t := range sess.Turns {
		out.Turns[i] = turnResponse{Seq: t.Seq, Role: t.Role, Content: t.Content, Name: t.Name, ToolCallID: t.ToolCallID,
			ToolCalls: t.ToolCalls, Metadata: t.Metadata, CreatedAt: timestamp(t.CreatedAt)}
	}
	if out.StateKeys == nil {
		out.StateKeys = []string{}
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return s.send(c, http.StatusOK, out)
}

// closeRequest is the body of POST /v1/sessions/{id}/close.
type closeRequest struct {
	ExpectedRevision *int64 `json:"expected_revision"`
	Fence            *int64 `json:"fence"`
}

// handleCloseSession: POST /v1/sessions/{id}/close (runtime), under the
// same rule as an append (revision required, fence when leased); with the
// lease's Lease-Token header it frees the lease too. 200 with the closed
// session.
func (s *Server) handleCloseSession(c echo.Context) error {
	ss, id, err := s.sessionTarget(c)
	if err != nil {
		return err
	}
	var req closeRequest
	if err := decodeOptional(c, &req); err != nil {
		return err
	}
	expected, viaHeader, err := requirePrecondition(c.Request(), req.ExpectedRevision, false)
	if err != nil {
		return err
	}
	var token string
	if len(c.Request().Header.Values(headerLeaseToken)) > 0 {
		if token, err = leaseToken(c); err != nil {
			return err
		}
	}
	sess, err := ss.Close(c.Request().Context(), id, session.WriteCondition{ExpectedRevision: &expected, Fence: req.Fence}, token)
	if err != nil {
		return headerErr(err, viaHeader)
	}
	return s.send(c, http.StatusOK, sessionBody(sess))
}
