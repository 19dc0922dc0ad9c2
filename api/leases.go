package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/leases"
)

// acquireLeasesRequest is the body of POST /v1/leases.
type acquireLeasesRequest struct {
	Resources []string `json:"resources"`
	Holder    string   `json:"holder"`
	TTLMs     *int64   `json:"ttl_ms"`
	WaitMs    *int64   `json:"wait_ms"`

	ttl, wait time.Duration
}

func (r *acquireLeasesRequest) validate() (err error) {
	if err := leases.ValidateResources(r.Resources); err != nil {
		return err
	}
	if r.ttl, err = msDuration(r.TTLMs, "ttl_ms", leases.MinTTL, leases.MaxTTL, leases.DefaultTTL); err != nil {
		return err
	}
	r.wait, err = msDuration(r.WaitMs, "wait_ms", 0, leases.MaxWait, 0)
	return err
}

// leasesResponse is a granted generic lease.
type leasesResponse struct {
	LeaseID   string           `json:"lease_id"`
	Token     string           `json:"token"`
	Fences    map[string]int64 `json:"fences"`
	ExpiresAt timestamp        `json:"expires_at"`
}

// handleAcquireLeases: POST /v1/leases (runtime). Every resource or none,
// taken in sorted order; on a conflict everything taken is released, the
// request waits (up to wait_ms) for the blocking resource's release and
// retries the whole set. One token holds them all. 200 {lease_id, token,
// fences, expires_at}; 423 lease_held with conflicts; 429 quota_exceeded
// with Retry-After when the token holds PROMPTD_LEASE_MAX_PER_TOKEN live
// generic leases.
func (s *Server) handleAcquireLeases(c echo.Context) error {
	var req acquireLeasesRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	s.extendDeadlines(c, req.wait)
	// The service validates the holder (and the rest again, for callers
	// other than this handler).
	l, err := s.rt.Leases.Acquire(c.Request().Context(), leases.AcquireInput{
		Resources: req.Resources, Holder: req.Holder, TTL: req.ttl, Wait: req.wait, Owner: actorOf(c)})
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return s.send(c, http.StatusOK, leasesResponse{LeaseID: l.ID.String(), Token: l.Token, Fences: l.Fences, ExpiresAt: timestamp(l.ExpiresAt)})
}

// handleRenewLeases: POST /v1/leases/{lease_id}/renew (runtime), header
// Lease-Token, body {ttl_ms}. Every resource still held is renewed; if any
// was lost: 409 lease_lost naming them in resources (the rest stays held
// until released). 200 {expires_at}.
func (s *Server) handleRenewLeases(c echo.Context) error {
	id, token, err := s.leaseRequest(c)
	if err != nil {
		return err
	}
	var req renewRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	ttl, err := msDuration(req.TTLMs, "ttl_ms", leases.MinTTL, leases.MaxTTL, leases.DefaultTTL)
	if err != nil {
		return err
	}
	expires, err := s.rt.Leases.Renew(c.Request().Context(), id, token, ttl)
	if err != nil {
		return err
	}
	return s.send(c, http.StatusOK, renewed{ExpiresAt: timestamp(expires)})
}

// handleReleaseLeases: DELETE /v1/leases/{lease_id} (runtime), header
// Lease-Token. Every resource still held by the token is released; 204,
// or 409 lease_lost naming in resources what it no longer held. Another
// holder's lease is never touched.
func (s *Server) handleReleaseLeases(c echo.Context) error {
	id, token, err := s.leaseRequest(c)
	if err != nil {
		return err
	}
	if err := s.rt.Leases.Release(c.Request().Context(), id, token); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// leaseRequest reads the lease id and the Lease-Token of a renew or release
// (an id no lease can have is 404 lease_not_found, before the token).
func (s *Server) leaseRequest(c echo.Context) (id leases.ID, token string, err error) {
	raw, err := param(c, "lease_id")
	if err != nil {
		return leases.ID{}, "", err
	}
	if id, err = leases.ParseID(raw); err != nil {
		return leases.ID{}, "", err
	}
	if token, err = leaseToken(c); err != nil {
		return leases.ID{}, "", err
	}
	return id, token, nil
}
