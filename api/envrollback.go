package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/wire"
)

// envRollbackRequest is the body of POST /v1/agents/{agent}/envs/{env}/rollback.
type envRollbackRequest struct {
	ExpectedRevision *int64 `json:"expected_revision"`
	ToVersion        *int   `json:"to_version"`
	Reason           string `json:"reason"`
}

func (r *envRollbackRequest) validate() error {
	if r.ToVersion != nil && *r.ToVersion < 1 {
		return invalidField("to_version", "to_version must be a version number, 1 or more")
	}
	return nil
}

// handleEnvRollback: POST /v1/agents/{agent}/envs/{env}/rollback (admin).
// The pointer's revision is required (expected_revision or If-Match; 428
// without). With an active release it rolls that release back (to_version
// is then not allowed); without, the pointer moves to to_version (default:
// the newest older, unrevoked version of the move history) and the version
// rolled away from is revoked in the env. 200 with the env, the release
// rolled back (or null) and the versions.
func (s *Server) handleEnvRollback(c echo.Context) error {
	agent, env, err := envPath(c)
	if err != nil {
		return err
	}
	var req envRollbackRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	expected, viaHeader, err := requirePrecondition(c.Request(), req.ExpectedRevision, false)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	in := release.EnvRollbackInput{Agent: agent, Env: env, ExpectedRevision: &expected, Reason: req.Reason}
	if req.ToVersion != nil {
		in.ToVersion = *req.ToVersion
	}
	out, cr, err := s.rt.Changes.RollbackEnv(ctx, s.caller(c, req), in)
	if done, err := s.settled(c, cr, err, viaHeader); done {
		return err
	}
	active, err := s.activeRelease(ctx, out.Env)
	if err != nil {
		return err
	}
	body := wire.EnvRollback{Env: envBody(out.Env, active), FromVersion: out.From, ToVersion: out.To}
	if out.Release != nil {
		r := releaseBody(out.Release)
		body.Release = &r
	}
	c.Response().Header().Set("ETag", revisionETag(out.Env.Revision))
	return s.send(c, http.StatusOK, body)
}
