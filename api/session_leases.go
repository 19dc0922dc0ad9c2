package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/session"
)

// leaseRequest is the body of POST /v1/sessions/{id}/lease.
type leaseRequest struct {
	Holder string `json:"holder"`
	TTLMs  *int64 `json:"ttl_ms"`
	WaitMs *int64 `json:"wait_ms"`
	Mode   string `json:"mode"`
	Token  string `json:"token"`
}

// sessionLeaseResponse is a granted session lease. The token renews and
// releases it; it is never put in a URL or a log.
type sessionLeaseResponse struct {
	LeaseID   string    `json:"lease_id"`
	Token     string    `json:"token"`
	Fence     int64     `json:"fence"`
	ExpiresAt timestamp `json:"expires_at"`
}

// renewRequest is the body of the lease renew routes.
type renewRequest struct {
	TTLMs *int64 `json:"ttl_ms"`
}

func (r *renewRequest) validate() error {
	if r.TTLMs == nil {
		return invalidField("ttl_ms", "ttl_ms is required: %d..%d", session.MinLeaseTTL.Milliseconds(), session.MaxLeaseTTL.Milliseconds())
	}
	return nil
}

// renewed is the answer to a renew.
type renewed struct {
	ExpiresAt timestamp `json:"expires_at"`
}

// handleAcquireSessionLease: POST /v1/sessions/{id}/lease (runtime). Modes:
// reject (default) answers 423 lease_held at once when another holds it;
// wait waits up to wait_ms, woken by the release; preempt takes it over
// with a higher fence. Presenting the current token re-enters (same
// fence). The session row's fence is raised before the answer, so a former
// holder is fenced out at once. 200 {lease_id, token, fence, expires_at}.
func (s *Server) handleAcquireSessionLease(c echo.Context) error {
	ss, id, err := s.sessionTarget(c)
	if err != nil {
		return err
	}
	var req leaseRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	ttl, err := msDuration(req.TTLMs, "ttl_ms", session.MinLeaseTTL, session.MaxLeaseTTL, session.DefaultLeaseTTL)
	if err != nil {
		return err
	}
	wait, err := msDuration(req.WaitMs, "wait_ms", 0, session.MaxLeaseWait, 0)
	if err != nil {
		return err
	}
	s.extendDeadlines(c, wait)
	l, err := ss.AcquireLease(c.Request().Context(), id, session.LeaseInput{Holder: req.Holder, TTL: ttl, Wait: wait,
		Mode: req.Mode, Token: req.Token})
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return s.send(c, http.StatusOK, sessionLeaseResponse{LeaseID: l.LeaseID, Token: l.Token, Fence: l.Fence, ExpiresAt: timestamp(l.ExpiresAt)})
}

// handleRenewSessionLease: POST /v1/sessions/{id}/lease/renew (runtime),
// header Lease-Token, body {ttl_ms}. 200 {expires_at}; a token that is not
// current: 409 lease_lost.
func (s *Server) handleRenewSessionLease(c echo.Context) error {
	ss, id, err := s.sessionTarget(c)
	if err != nil {
		return err
	}
	token, err := leaseToken(c)
	if err != nil {
		return err
	}
	var req renewRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	ttl, err := msDuration(req.TTLMs, "ttl_ms", session.MinLeaseTTL, session.MaxLeaseTTL, session.DefaultLeaseTTL)
	if err != nil {
		return err
	}
	exp, err := ss.RenewLease(c.Request().Context(), id, token, ttl)
	if err != nil {
		return err
	}
	return s.send(c, http.StatusOK, renewed{ExpiresAt: timestamp(exp)})
}

// handleReleaseSessionLease: DELETE /v1/sessions/{id}/lease (runtime),
// header Lease-Token. 204 when freed (or its hold count decreased); 409
// lease_lost when the token is not current. Another holder's lease is
// never touched.
func (s *Server) handleReleaseSessionLease(c echo.Context) error {
	ss, id, err := s.sessionTarget(c)
	if err != nil {
		return err
	}
	token, err := leaseToken(c)
	if err != nil {
		return err
	}
	if err := ss.ReleaseLease(c.Request().Context(), id, token); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
