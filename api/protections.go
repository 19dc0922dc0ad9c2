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
	as := s.rt.Access
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
	return s.setProtection(c, as, next, req, req.ExpectedRevision, false)
}

// handleDeleteProtection: DELETE /v1/protections/{env} lifts it (PUT with
// approvals 0); If-Match may name its revision.
func (s *Server) handleDeleteProtection(c echo.Context) error {
	as := s.rt.Access
	env, err := param(c, "env")
	if err != nil {
		return err
	}
	expected, viaHeader, err := precondition(c.Request(), nil, false)
	if err != nil {
		return err
	}
	zero := 0
	return s.setProtection(c, as, access.Protection{Env: env}, putProtectionRequest{Approvals: &zero, ExpectedRevision: expected},
		expected, viaHeader)
}

// setProtection writes next, or gates it when it weakens the protection
// in force: then it is approved under that protection.
func (s *Server) setProtection(c echo.Context, as *access.Service, next access.Protection, req putProtectionRequest, expected *int64, viaHeader bool) error {
	_ = as
	p, cr, err := s.rt.Changes.SetProtection(c.Request().Context(), s.caller(c, req), next, expected)
	if done, err := s.settled(c, cr, err, viaHeader); done {
		return err
	}
	return s.send(c, http.StatusOK, protectionResponse{Env: p.Env, Approvals: p.Approvals, Agents: p.Agents, Approvers: p.Approvers,
		Revision: p.Revision, UpdatedBy: p.UpdatedBy, UpdatedAt: timestamp(p.UpdatedAt)})
}
