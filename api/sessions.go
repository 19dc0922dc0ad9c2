package api

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/session"
	"github.com/promptd/promptd/wire"
)

// sessionBody is s as its create and close answer it.
func sessionBody(s *session.Session) wire.Session {
	out := wire.Session{SessionSummary: sessionSummary(s), Metadata: s.Metadata, IdleTTLMs: s.IdleTTLMs}
	if len(out.Metadata) == 0 {
		out.Metadata = json.RawMessage("{}")
	}
	return out
}

// sessionSummary is s as GET /v1/sessions lists it.
func sessionSummary(s *session.Session) wire.SessionSummary {
	out := wire.SessionSummary{SessionID: s.SessionID, Agent: s.Agent, Env: s.Env,
		PinnedVersion: s.PinnedVersion, Revision: s.Revision, State: s.State, Fence: s.Fence,
		TurnCount: s.TurnCount, CreatedAt: wire.At(s.CreatedAt), UpdatedAt: wire.At(s.UpdatedAt)}
	if s.UserID != "" {
		u := s.UserID
		out.UserID = &u
	}
	if s.Lease != nil {
		out.Lease = &wire.LeaseInfo{Holder: s.Lease.Holder, Fence: s.Lease.Fence, ExpiresAt: wire.At(s.Lease.ExpiresAt)}
	}
	return out
}

func sessionEntity(s *session.Session) any { return sessionBody(s) }

// sessions is the session service, or 500 internal when none is wired.
// sessionPath reads the session id path parameter.
func sessionPath(c echo.Context) (string, error) { return pathIDAs(c, "id", "session_id") }

// sessionTarget is the prelude of every /v1/sessions/{id} handler: the
// session service and the validated session id.
func (s *Server) sessionTarget(c echo.Context) (*session.Service, string, error) {
	ss := s.rt.Sessions
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
	ss := s.rt.Sessions
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
	out := wire.SessionDetail{Session: sessionBody(sess), Turns: sess.Turns, NextSince: sess.NextSince, StateKeys: sess.StateKeys}
	if out.Turns == nil {
		out.Turns = []wire.Turn{}
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
