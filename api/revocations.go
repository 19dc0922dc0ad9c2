package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/promptstore"
)

// revokeRequest is the body of POST .../envs/{env}/revocations.
type revokeRequest struct {
	Version *int   `json:"version"`
	Reason  string `json:"reason"`
}

func (r *revokeRequest) validate() error {
	if r.Version == nil {
		return invalidField("version", "version is required")
	}
	return nil
}

// handleRevoke: POST /v1/agents/{agent}/envs/{env}/revocations (admin):
// the version is no longer served in the env. 200 with the env (the
// revocation is part of the env, not a resource of its own); revoking a
// revoked version changes nothing and answers the same. The version the
// pointer names: 409 version_current; no pointer: 409 no_pointer.
func (s *Server) handleRevoke(c echo.Context) error {
	agent, env, err := envPath(c)
	if err != nil {
		return err
	}
	var req revokeRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	return s.revoke(c, promptstore.RevokeInput{Agent: agent, Env: env, Version: *req.Version, Reason: req.Reason})
}

// handleLiftRevocation: DELETE /v1/agents/{agent}/envs/{env}/revocations/{version}
// (admin) serves the version in the env again. 200 with the env; lifting
// what is not revoked changes nothing and answers the same.
func (s *Server) handleLiftRevocation(c echo.Context) error {
	agent, env, err := envPath(c)
	if err != nil {
		return err
	}
	n, err := pathVersion(c, "version")
	if err != nil {
		return err
	}
	e, cr, err := s.rt.Changes.LiftRevocation(c.Request().Context(), s.caller(c, nil),
		promptstore.RevokeInput{Agent: agent, Env: env, Version: n, Lift: true})
	if done, err := s.settled(c, cr, err, false); done {
		return err
	}
	return s.sendEnv(c, http.StatusOK, e)
}

func (s *Server) revoke(c echo.Context, in promptstore.RevokeInput) error {
	ctx := c.Request().Context()
	e, err := s.rt.Prompts.Revoke(ctx, in)
	if err != nil {
		return err
	}
	return s.sendEnv(c, http.StatusOK, e)
}
