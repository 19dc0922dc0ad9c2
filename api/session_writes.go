package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/session"
	"github.com/promptd/promptd/wire"
)

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
		var t wire.TurnInput
		if err := decodeObject(raw, fmt.Sprintf("turns[%d].", i), &t); err != nil {
			return err
		}
		r.turns[i] = t
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
	out, err := ss.Append(c.Request().Context(), id, session.WriteCondition{ExpectedRevision: &expected, Fence: req.Fence}, req.turns,
		recordAnswer(s, c, http.StatusCreated, appendedEntity))
	if err != nil {
		return headerErr(err, viaHeader)
	}
	traceRevision(c, out.Revision)
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
	rev, err := ss.PutState(c.Request().Context(), id, key, expected, req.Fence, req.Value,
		recordAnswer(s, c, http.StatusOK, func(rev int64) any { return stateWritten{Key: key, Revision: rev} }))
	if err != nil {
		return headerErr(err, viaHeader)
	}
	traceRevision(c, rev)
	return s.send(c, http.StatusOK, stateWritten{Key: key, Revision: rev})
}

// handleGetState: GET /v1/sessions/{id}/state?keys=: the entries, {key:
// {value, revision}}; with keys=a,b only those (keys without an entry are
// left out). The answer is written from the rows in one buffer (the
// per-session byte and key limits bound it), not built as a map and
// encoded again.
func (s *Server) handleGetState(c echo.Context) error {
	ss, id, err := s.sessionTarget(c)
	if err != nil {
		return err
	}
	var keys []string
	if q := c.QueryParams(); q.Has("keys") {
		if keys, err = stateKeys(q["keys"]); err != nil {
			return err
		}
	}
	body, err := ss.StateJSON(c.Request().Context(), id, keys, nil)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, body)
}

// stateKeys reads ?keys=a,b (the parameter may repeat): distinct, valid
// state keys, at least one.
func stateKeys(values []string) ([]string, error) {
	keys := []string{}
	seen := map[string]bool{}
	for _, v := range values {
		for _, k := range strings.Split(v, ",") {
			if k == "" {
				return nil, invalidField("keys", "keys is a comma-separated list of state keys, none empty")
			}
			if len(seen) >= session.MaxStateKeysPerRead {
				return nil, invalidField("keys", "at most %d keys", session.MaxStateKeysPerRead)
			}
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	return keys, nil
}
