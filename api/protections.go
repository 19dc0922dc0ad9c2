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
	p, err := as.SetProtection(c.Request().Context(), access.Protection{Env: env, Approvals: *req.Approvals, Agents: req.Agents,
		Approvers: req.Approvers}, req.ExpectedRevision)
	if err != nil {
		return err
	}
	return s.send(c, http.StatusOK, protectionResponse{Env: p.Env, Approvals: p.Approvals, Agents: p.Agents, Approvers: p.Approvers,
		Revision: p.Revision, UpdatedBy: p.UpdatedBy, UpdatedAt: timestamp(p.UpdatedAt)})
}
