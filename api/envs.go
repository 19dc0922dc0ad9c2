package api

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/promptstore"
)

// envResponse is an env pointer as SQL has it.
type envResponse struct {
	Agent     string          `json:"agent"`
	Env       string          `json:"env"`
	Version   int             `json:"version"`
	Revision  int64           `json:"revision"`
	UpdatedAt timestamp       `json:"updated_at"`
	UpdatedBy string          `json:"updated_by"`
	History   []moveResponse  `json:"history"`
	Revoked   []int           `json:"revoked"`
	Release   *releaseSummary `json:"release"`
}

// moveResponse is one move of an env pointer.
type moveResponse struct {
	FromVersion int       `json:"from_version"`
	ToVersion   int       `json:"to_version"`
	Revision    int64     `json:"revision"`
	Action      string    `json:"action"`
	Reason      string    `json:"reason,omitempty"`
	Actor       string    `json:"actor"`
	At          timestamp `json:"at"`
}

// releaseSummary names the env's active release (releases come with their
// own package; until then it is always null).
type releaseSummary struct {
	ID string `json:"id"`
}

func envBody(e *promptstore.Env) envResponse {
	out := envResponse{Agent: e.Agent, Env: e.Env, Version: e.Version, Revision: e.Revision,
		UpdatedAt: timestamp(e.UpdatedAt), UpdatedBy: e.UpdatedBy, History: make([]moveResponse, len(e.History)), Revoked: e.Revoked}
	for i, m := range e.History {
		out.History[i] = moveResponse{FromVersion: m.FromVersion, ToVersion: m.ToVersion, Revision: m.Revision,
			Action: m.Action, Reason: m.Reason, Actor: m.Actor, At: timestamp(m.At)}
	}
	if out.Revoked == nil {
		out.Revoked = []int{}
	}
	if e.ActiveReleaseID != "" {
		out.Release = &releaseSummary{ID: e.ActiveReleaseID}
	}
	return out
}

// sendEnv answers with an env and its ETag, the pointer's revision.
func (s *Server) sendEnv(c echo.Context, status int, e *promptstore.Env) error {
	h := c.Response().Header()
	h.Set("ETag", revisionETag(e.Revision))
	h.Set(echo.HeaderCacheControl, "no-cache")
	return s.send(c, status, envBody(e))
}

func revisionETag(rev int64) string { return `"` + strconv.FormatInt(rev, 10) + `"` }

// envPath reads the agent and env path parameters.
func envPath(c echo.Context) (agent, env string, err error) {
	if agent, err = pathID(c, "agent"); err != nil {
		return "", "", err
	}
	if env, err = pathID(c, "env"); err != nil {
		return "", "", err
	}
	return agent, env, nil
}

// handleGetEnv: GET /v1/agents/{agent}/envs/{env}, read from SQL. An env
// without a pointer is 404 not_found (404 agent_not_found when the agent
// does not exist). If-None-Match with the current revision gives 304.
func (s *Server) handleGetEnv(c echo.Context) error {
	agent, env, err := envPath(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	e, err := s.cfg.Prompts.GetEnv(ctx, agent, env)
	if err != nil {
		err = s.agentErr(ctx, agent, err)
		if errors.Is(err, promptstore.ErrNoPointer) && !errors.Is(err, promptstore.ErrAgentNotFound) {
			return &Error{Code: CodeNotFound, Detail: fmt.Sprintf("agent %s has no pointer in env %s", agent, env), Err: err}
		}
		return err
	}
	if etagMatches(c.Request().Header.Get("If-None-Match"), revisionETag(e.Revision)) {
		c.Response().Header().Set("ETag", revisionETag(e.Revision))
		return notModified(c)
	}
	return s.sendEnv(c, http.StatusOK, e)
}

// putEnvRequest is the body of PUT /v1/agents/{agent}/envs/{env}.
type putEnvRequest struct {
	Version          *int   `json:"version"`
	ExpectedRevision *int64 `json:"expected_revision"`
	Reason           string `json:"reason"`
}

func (r *putEnvRequest) validate() error {
	if r.Version == nil {
		return invalidField("version", "version is required")
	}
	if len(r.Reason) > promptstore.MaxReason {
		return invalidField("reason", "reason is longer than %d bytes", promptstore.MaxReason)
	}
	return nil
}

// handlePutEnv: PUT /v1/agents/{agent}/envs/{env} (admin) moves the
// pointer, or creates it with expected revision 0. 200 with the env, 201
// when it was created. The precondition is expected_revision in the body,
// If-Match: "<revision>", or If-None-Match: * (revision 0); body and header
// must agree. A stale precondition is 409 revision_conflict from the body,
// 412 precondition_failed from a header.
func (s *Server) handlePutEnv(c echo.Context) error {
	agent, env, err := envPath(c)
	if err != nil {
		return err
	}
	var req putEnvRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	expected, viaHeader, err := precondition(c.Request(), req.ExpectedRevision)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	e, err := s.cfg.Prompts.SwitchPointer(ctx, promptstore.SwitchInput{
		Agent: agent, Env: env, Version: *req.Version, ExpectedRevision: expected, Reason: req.Reason})
	if err != nil {
		err = s.agentErr(ctx, agent, err)
		if viaHeader {
			return fromHeader{err}
		}
		return err
	}
	status := http.StatusOK
	if *expected == 0 {
		status = http.StatusCreated
	}
	return s.sendEnv(c, status, e)
}

// precondition combines the body's expected_revision with If-Match or
// If-None-Match: * into the expected revision (nil: none given), and says
// whether a header gave it.
func precondition(r *http.Request, body *int64) (*int64, bool, error) {
	ifMatch, ifNone := r.Header.Values("If-Match"), r.Header.Values("If-None-Match")
	var header *int64
	switch {
	case len(ifMatch) > 0 && len(ifNone) > 0:
		return nil, false, invalidField("If-Match", "send If-Match or If-None-Match, not both")
	case len(ifMatch) > 0:
		n, ok := parseRevisionETag(ifMatch)
		if !ok {
			return nil, false, invalidField("If-Match", `If-Match must be one revision ETag, such as "3"`)
		}
		header = &n
	case len(ifNone) > 0:
		if len(ifNone) != 1 || ifNone[0] != "*" {
			return nil, false, invalidField("If-None-Match", "If-None-Match must be * (create the pointer)")
		}
		zero := int64(0)
		header = &zero
	}
	switch {
	case header == nil:
		return body, false, nil
	case body != nil && *body != *header:
		return nil, false, invalidField("expected_revision",
			"expected_revision %d does not agree with the header's revision %d", *body, *header)
	}
	return header, true, nil
}

// parseRevisionETag reads If-Match: "<n>" (one strong ETag, n >= 0).
func parseRevisionETag(vs []string) (int64, bool) {
	if len(vs) != 1 {
		return 0, false
	}
	v := vs[0]
	if len(v) < 3 || v[0] != '"' || v[len(v)-1] != '"' {
		return 0, false
	}
	digits := v[1 : len(v)-1]
	if digits == "0" {
		return 0, true
	}
	n, ok := positive(digits, 1<<53)
	return int64(n), ok
}
