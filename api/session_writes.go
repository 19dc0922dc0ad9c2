package api

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/session"
)

// turnRequest is one turn of an append.
type turnRequest struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  json.RawMessage `json:"tool_calls"`
	Metadata   json.RawMessage `json:"metadata"`
}

// appendRequest is the body of POST /v1/sessions/{id}/turns.
type appendRequest struct {
	ExpectedRevision *int64            `json:"expected_revision"`
	Fence            *int64            `json:"fence"`
	Turns            []json.RawMessage `json:"turns"`

	turns []session.TurnInput
}

func (r *appendRequest) validate() error {
	if len(r.Turns) == 0 || len(r.Turns) > session.MaxTurns {
		return invalidField("turns", "turns must hold 1..%d turns", session.MaxTurns)
	}
	r.turns = make([]session.TurnInput, len(r.Turns))
	for i, raw := range r.Turns {
		var t turnRequest
		if err := decodeObject(raw, fmt.Sprintf("turns[%d].", i), &t); err != nil {
			return err
		}
		r.turns[i] = session.TurnInput{Role: t.Role, Content: t.Content, Name: t.Name, ToolCallID: t.ToolCallID,
			ToolCalls: t.ToolCalls, Metadata: t.Metadata}
	}
	return nil
}

func appendedEntity(a *session.Appended) any { return a }

// handleAppendTurns: POST /v1/sessions/{id}/turns (runtime,
// Idempotency-Key). The write rule: expected_revision (or If-Match) is
// required; with fence, the fence must be the session's current one (409
// stale_fence); without, no lease may be held (423 lease_held). 201
// {revision, seqs}.
func (s *Server) handleAppendTurns(c echo.Context) error {
	ss, id, err := s.sessionTarget(c)
	if err != nil {
		return err
	}
	var req appendRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	expected, viaHeader, err := requirePrecondition(c.Request(), req.ExpectedRevision, false)
	if err != nil {
		return err
	}
	ctx := onCommit(s, c, http.StatusCreated, appendedEntity)
	out, err := ss.Append(ctx, id, session.WriteCondition{ExpectedRevision: &expected, Fence: req.Fence}, req.turns)
	if err != nil {
		return headerErr(err, viaHeader)
	}
	return s.send(c, http.StatusCreated, out)
}

// putStateRequest is the body of PUT /v1/sessions/{id}/state/{key}.
type putStateRequest struct {
	Value            json.RawMessage `json:"value"`
	ExpectedRevision *int64          `json:"expected_revision"`
	Fence            *int64          `json:"fence"`
}

func (r *putStateRequest) validate() error {
	if r.Value == nil {
		return invalidField("value", "value is required (any JSON, null included)")
	}
	return nil
}

// stateWritten is the answer to a state PUT.
type stateWritten struct {
	Key      string `json:"key"`
	Revision int64  `json:"revision"`
}

// handlePutState: PUT /v1/sessions/{id}/state/{key} (runtime,
// Idempotency-Key): a compare-and-set of one blackboard entry on its own
// revision (expected_revision 0, or If-None-Match: *, creates it), under the
// session's write rule. 200 {key, revision}.
func (s *Server) handlePutState(c echo.Context) error {
	ss, id, err := s.sessionTarget(c)
	if err != nil {
		return err
	}
	key, err := pathID(c, "key")
	if err != nil {
		return err
	}
	var req putStateRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	expected, viaHeader, err := requirePrecondition(c.Request(), req.ExpectedRevision, true)
	if err != nil {
		return err
	}
	ctx := onCommit(s, c, http.StatusOK, func(rev int64) any { return stateWritten{Key: key, Revision: rev} })
	rev, err := ss.PutState(ctx, id, key, expected, req.Fence, req.Value)
	if err != nil {
		return headerErr(err, viaHeader)
	}
	return s.send(c, http.StatusOK, stateWritten{Key: key, Revision: rev})
}

// stateEntry is one blackboard entry.
type stateEntry struct {
	Value    json.RawMessage `json:"value"`
	Revision int64           `json:"revision"`
}

// handleGetState: GET /v1/sessions/{id}/state: every entry, {key: {value,
// revision}}.
func (s *Server) handleGetState(c echo.Context) error {
	ss, id, err := s.sessionTarget(c)
	if err != nil {
		return err
	}
	entries, err := ss.State(c.Request().Context(), id)
	if err != nil {
		return err
	}
	out := make(map[string]stateEntry, len(entries))
	for k, e := range entries {
		out[k] = stateEntry{Value: e.Value, Revision: e.Revision}
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return s.send(c, http.StatusOK, out)
}
