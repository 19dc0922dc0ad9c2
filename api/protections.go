package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/access"
)

// putProtectionRequest is the body of PUT /v1/protections/{env}.
type putProtectionRequest struct {
	Approvals        *int     `json:"approvals"`
	Agents           []string `json:"agents"`
	Approvers        []string `json:"approvers"`
	ExpectedRevision *int64   `json:"expected_revision"`
}

type protectionResponse struct {
	Env       string    `json:"env"`
	Approvals int       `json:"approvals"`
	Agents    []string  `json:"agents"`
	Approvers []string  `json:"approvers"`
	Revision  int64     `json:"revision"`
	UpdatedBy string    `json:"updated_by"`
	UpdatedAt timestamp `json:"updated_at"`
}

// handlePutProtection: PUT /v1/protections/{env}: approvals 0 lifts it.
func (s *Server) handlePutProtection(c echo.Context) error {
	as, err := s.tokens()
	if err != nil {
		return err
	}
	env, err := param(c, "env")
	if err != nil {
		return err
	}
	var req putProtectionRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Approvals == nil {
		return invalidField("approvals", "approvals is required: how many principals other than the requester's must approve (0 lifts the protection)")
	}
	next := access.Protection{Env: env, Approvals: *req.Approvals, Agents: req.Agents, Approvers: req.Approvers}
	if err := next.Validate(); err != nil {
		return err
	}
	// A weakening is approved under the protection in force.
	cur, err := as.Protection(c.Request().Context(), env)
	if err != nil {
		return err
	}
	if cur.WeakenedBy(next) {
		target := cur.Revision
		if req.ExpectedRevision != nil {
			target = *req.ExpectedRevision
		}
		if handled, err := s.gate(c, actionProtectionSet, "", env, req, target); handled || err != nil {
			return err
		}
	}
	p, err := as.SetProtection(c.Request().Context(), next, req.ExpectedRevision)
	if err != nil {
		return err
	}
	return s.send(c, http.StatusOK, protectionResponse{Env: p.Env, Approvals: p.Approvals, Agents: p.Agents, Approvers: p.Approvers,
		Revision: p.Revision, UpdatedBy: p.UpdatedBy, UpdatedAt: timestamp(p.UpdatedAt)})
}
