package api

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/ident"
)

// changeRequestResponse is a change request as the API shows it.
type changeRequestResponse struct {
	ID             string          `json:"id"`
	State          string          `json:"state"`
	Action         string          `json:"action"`
	Agent          string          `json:"agent"`
	Env            string          `json:"env"`
	Request        json.RawMessage `json:"request"`
	TargetRevision int64           `json:"target_revision"`
	RequestedBy    string          `json:"requested_by"`
	RequestedToken string          `json:"requested_token"`
	Approvals      []string        `json:"approvals"`
	Needed         int             `json:"approvals_needed"`
	Problem        json.RawMessage `json:"problem"`
	Revision       int64           `json:"revision"`
	CreatedAt      timestamp       `json:"created_at"`
	ExpiresAt      timestamp       `json:"expires_at"`
}

func changeRequestBody(cr *access.ChangeRequest) changeRequestResponse {
	return changeRequestResponse{ID: cr.ID, State: cr.State, Action: cr.Action, Agent: cr.Agent, Env: cr.Env, Request: cr.Request,
		TargetRevision: cr.TargetRevision, RequestedBy: cr.RequestedBy, RequestedToken: cr.RequestedToken, Approvals: cr.Approvals,
		Needed: cr.Needed, Problem: cr.Problem, Revision: cr.Revision, CreatedAt: timestamp(cr.CreatedAt), ExpiresAt: timestamp(cr.ExpiresAt)}
}

// byChangeRequest: the scope of a change request route is its request's
// agent and env.
var byChangeRequest = scopeNeed{kind: needLookup, of: func(s *Server, c echo.Context) (string, string, error) {
	cr, err := s.rt.Access.ChangeRequest(c.Request().Context(), c.Param("id"))
	if err != nil {
		return "", "", err
	}
	return cr.Agent, cr.Env, nil
}}

func (s *Server) changeRequestOf(c echo.Context) (*access.Service, string, error) {
	as := s.rt.Access
	id, err := param(c, "id")
	if err != nil {
		return nil, "", err
	}
	return as, id, ident.Validate("id", id)
}

// handleApproveChangeRequest: POST /v1/change-requests/{id}/approve.
func (s *Server) handleApproveChangeRequest(c echo.Context) error {
	_, id, err := s.changeRequestOf(c) // refuses without an access service
	if err != nil {
		return err
	}
	cr, err := s.rt.Changes.Approve(c.Request().Context(), id, tokenOf(c))
	if err != nil {
		return err
	}
	return s.send(c, http.StatusOK, changeRequestBody(cr))
}

// handleRejectChangeRequest: POST /v1/change-requests/{id}/reject.
func (s *Server) handleRejectChangeRequest(c echo.Context) error {
	as, id, err := s.changeRequestOf(c)
	if err != nil {
		return err
	}
	cr, err := as.Reject(c.Request().Context(), id, tokenOf(c))
	if err != nil {
		return err
	}
	return s.send(c, http.StatusOK, changeRequestBody(cr))
}

// handleCancelChangeRequest: POST /v1/change-requests/{id}/cancel.
func (s *Server) handleCancelChangeRequest(c echo.Context) error {
	as, id, err := s.changeRequestOf(c)
	if err != nil {
		return err
	}
	cr, err := as.Cancel(c.Request().Context(), id, tokenOf(c))
	if err != nil {
		return err
	}
	return s.send(c, http.StatusOK, changeRequestBody(cr))
}

// handleGetChangeRequest: GET /v1/change-requests/{id}.
func (s *Server) handleGetChangeRequest(c echo.Context) error {
	as, id, err := s.changeRequestOf(c)
	if err != nil {
		return err
	}
	cr, err := as.ChangeRequest(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return s.send(c, http.StatusOK, changeRequestBody(cr))
}

// handleListChangeRequests: GET /v1/change-requests?state=&agent=&env=.
func (s *Server) handleListChangeRequests(c echo.Context) error {
	as := s.rt.Access
	page, err := pageOf(c)
	if err != nil {
		return err
	}
	t := tokenOf(c)
	f := access.ListFilter{State: c.QueryParam("state"), Agent: c.QueryParam("agent"), Env: c.QueryParam("env"), Limit: page.Limit,
		Scope: listScope(t)}
	switch f.State {
	case "", access.Pending, access.Applied, access.Failed, access.Rejected, access.Expired, access.Cancelled:
	default:
		return invalidField("state", "state is pending, applied, failed, rejected, expired or cancelled")
	}
	for name, v := range map[string]string{"agent": f.Agent, "env": f.Env} {
		if v != "" {
			if err := ident.Validate(name, v); err != nil {
				return err
			}
		}
	}
	if page.Cursor != "" {
		n, ok := positive(page.Cursor, 1<<62)
		if !ok || n == 0 {
			return invalidField("cursor", "cursor must be the next value of a previous page")
		}
		f.Cursor = int64(n)
	}
	crs, next, err := as.ChangeRequests(c.Request().Context(), f)
	if err != nil {
		return err
	}
	out := list[changeRequestResponse]{Items: []changeRequestResponse{}}
	for _, cr := range crs {
		if visible(t, cr.Agent, cr.Env, "") {
			out.Items = append(out.Items, changeRequestBody(cr))
		}
	}
	if next > 0 {
		out.Next = cursor(strconv.FormatInt(next, 10))
	}
	return s.send(c, http.StatusOK, out)
}
