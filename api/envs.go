package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/wire"
)

// envBody renders an env with its active release (nil: none).
func envBody(e *promptstore.Env, rel *release.Release) wire.Env {
	out := wire.Env{Agent: e.Agent, Env: e.Env, Version: e.Version, Revision: e.Revision,
		UpdatedAt: wire.At(e.UpdatedAt), UpdatedBy: e.UpdatedBy, History: make([]wire.Move, len(e.History)), Revoked: e.Revoked}
	for i, m := range e.History {
		out.History[i] = wire.Move{FromVersion: m.FromVersion, ToVersion: m.ToVersion, Revision: m.Revision,
			Action: m.Action, Reason: m.Reason, Actor: m.Actor, At: wire.At(m.At)}
	}
	if out.Revoked == nil {
		out.Revoked = []int{}
	}
	if rel != nil {
		r := releaseBody(rel)
		out.Release = &r
	}
	return out
}

// activeRelease is the env's active release read from SQL, or nil.
func (s *Server) activeRelease(ctx context.Context, e *promptstore.Env) (*release.Release, error) {
	if e.ActiveReleaseID == "" {
		return nil, nil
	}
	return s.rt.Releases.ActiveFor(ctx, e.ActiveReleaseID)
}

// sendEnv answers with an env, its active release and its ETag, the
// pointer's revision.
func (s *Server) sendEnv(c echo.Context, status int, e *promptstore.Env) error {
	rel, err := s.activeRelease(c.Request().Context(), e)
	if err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set("ETag", revisionETag(e.Revision))
	h.Set(echo.HeaderCacheControl, "no-cache")
	return s.send(c, status, envBody(e, rel))
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
// does not exist). If-None-Match with the current revision gives 304
// unless a release is active.
func (s *Server) handleGetEnv(c echo.Context) error {
	agent, env, err := envPath(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	e, err := s.rt.Prompts.GetEnv(ctx, agent, env)
	if err != nil {

		if errors.Is(err, promptstore.ErrNoPointer) && !errors.Is(err, promptstore.ErrAgentNotFound) {
			return &Error{Code: CodeNotFound, Detail: fmt.Sprintf("agent %s has no pointer in env %s", agent, env), Err: err}
		}
		return err
	}
	// The ETag is the pointer's revision (what If-Match names); an active
	// release in the body changes without it, so then the answer is full.
	if e.ActiveReleaseID == "" && etagMatches(c.Request().Header.Get("If-None-Match"), revisionETag(e.Revision)) {
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
	expected, viaHeader, err := precondition(c.Request(), req.ExpectedRevision, true)
	if err != nil {
		return err
	}
	in := promptstore.SwitchInput{Agent: agent, Env: env, Version: *req.Version, ExpectedRevision: expected, Reason: req.Reason}
	e, cr, err := s.rt.Changes.SwitchPointer(c.Request().Context(), s.caller(c, req), in)
	if done, err := s.settled(c, cr, err, viaHeader); done {
		return err
	}
	status := http.StatusOK
	if *expected == 0 {
		status = http.StatusCreated
	}
	return s.sendEnv(c, status, e)
}
