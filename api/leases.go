package api

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/session"
)

// Generic lease limits (API.md, Generic leases).
const (
	maxLeaseResources = 16
	leaseIDPrefix     = "ls_"
)

// A generic lease's id names its resources, so that any instance can renew
// or release it with nothing stored: "ls_" + base64url (no padding) of the
// sorted, distinct resource names joined by "\n". It is not a secret (the
// token is); the same set of resources always has the same id.
func leaseID(resources []string) string {
	return leaseIDPrefix + base64.RawURLEncoding.EncodeToString([]byte(strings.Join(resources, "\n")))
}

// errLeaseNotFound answers a lease id that no lease can have.
func errLeaseNotFound() *Error {
	return Errorf("lease_not_found", "no such lease: a lease_id is the one POST /v1/leases answered")
}

// parseLeaseID returns the resources a lease id names; anything that is not
// an id leaseID produces is 404 lease_not_found.
func parseLeaseID(id string) ([]string, error) {
	raw, ok := strings.CutPrefix(id, leaseIDPrefix)
	if !ok || len(raw) > 8192 {
		return nil, errLeaseNotFound()
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(raw)
	if err != nil {
		return nil, errLeaseNotFound()
	}
	rs := strings.Split(string(b), "\n")
	if len(rs) > maxLeaseResources || !slices.IsSorted(rs) || len(slices.Compact(slices.Clone(rs))) != len(rs) {
		return nil, errLeaseNotFound()
	}
	for _, r := range rs {
		if locks.ValidateResource("resources", r) != nil {
			return nil, errLeaseNotFound()
		}
	}
	return rs, nil
}

// leaseKeys maps resources to their lock keys, and back.
func (s *Server) leaseKeys(resources []string) (keys []string, back map[string]string, err error) {
	k := s.cfg.Keys
	back = make(map[string]string, len(resources))
	for _, r := range resources {
		key, err := k.Lease(r)
		if err != nil {
			return nil, nil, err
		}
		keys = append(keys, key)
		back[key] = r
	}
	return keys, back, nil
}

// acquireLeasesRequest is the body of POST /v1/leases.
type acquireLeasesRequest struct {
	Resources []string `json:"resources"`
	Holder    string   `json:"holder"`
	TTLMs     *int64   `json:"ttl_ms"`
	WaitMs    *int64   `json:"wait_ms"`

	ttl, wait time.Duration
}

func (r *acquireLeasesRequest) validate() (err error) {
	if len(r.Resources) == 0 || len(r.Resources) > maxLeaseResources {
		return invalidField("resources", "resources must name 1..%d resources", maxLeaseResources)
	}
	for i, res := range r.Resources {
		if err := locks.ValidateResource(fmt.Sprintf("resources[%d]", i), res); err != nil {
			return err
		}
	}
	if r.ttl, err = msDuration(r.TTLMs, "ttl_ms", session.MinLeaseTTL, session.MaxLeaseTTL, session.DefaultLeaseTTL); err != nil {
		return err
	}
	r.wait, err = msDuration(r.WaitMs, "wait_ms", 0, session.MaxLeaseWait, 0)
	return err
}

// leasesResponse is a granted generic lease.
type leasesResponse struct {
	LeaseID   string           `json:"lease_id"`
	Token     string           `json:"token"`
	Fences    map[string]int64 `json:"fences"`
	ExpiresAt timestamp        `json:"expires_at"`
}

// heldResources is a conflict of a generic lease, with the lock keys of
// its conflicts mapped back to the resources they lock.
type heldResources struct {
	held      *locks.HeldError
	resources map[string]string // lock key -> resource
}

func (e *heldResources) Error() string { return e.held.Error() }
func (e *heldResources) Unwrap() error { return e.held }

// resourcesLost is a renew or release of a generic lease that no longer
// held some of its resources.
type resourcesLost struct{ resources []string }

func (e *resourcesLost) Error() string {
	return "lease lost on " + strings.Join(e.resources, ", ")
}

// handleAcquireLeases: POST /v1/leases (runtime). Every resource or none,
// taken in sorted order; on a conflict everything taken is released, the
// request waits (up to wait_ms) for the blocking resource's release and
// retries the whole set. One token holds them all. 200 {lease_id, token,
// fences, expires_at}; 423 lease_held with conflicts.
func (s *Server) handleAcquireLeases(c echo.Context) error {
	var req acquireLeasesRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if err := promptstore.ValidateOpaque("holder", req.Holder); err != nil {
		return err
	}
	resources := slices.Compact(slices.Sorted(slices.Values(req.Resources)))
	keys, back, err := s.leaseKeys(resources)
	if err != nil {
		return err
	}
	s.extendDeadlines(c, req.wait)
	ctx := c.Request().Context()
	token := locks.NewToken()
	g, err := s.cfg.Locker.AcquireAll(ctx, keys, req.ttl, locks.WithWait(req.wait), locks.WithoutKeepalive(),
		locks.WithHolder(req.Holder), locks.WithOwnerToken(token))
	var held *locks.HeldError
	switch {
	case errors.As(err, &held):
		return &heldResources{held: held, resources: back}
	case err != nil:
		return err
	}
	out := leasesResponse{LeaseID: leaseID(resources), Token: token, Fences: make(map[string]int64, len(resources))}
	var expires time.Time
	for _, l := range g.Leases() {
		out.Fences[back[l.Key()]] = l.Fence()
		if e := l.ExpiresAt(); expires.IsZero() || e.Before(expires) {
			expires = e
		}
	}
	out.ExpiresAt = timestamp(expires)
	s.leaseEvent(ctx, "lease.acquired", resources, map[string]any{"holder": req.Holder, "fences": out.Fences, "lease_id": out.LeaseID})
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return s.send(c, http.StatusOK, out)
}

// handleRenewLeases: POST /v1/leases/{lease_id}/renew (runtime), header
// Lease-Token, body {ttl_ms}. Every resource still held is renewed; if any
// was lost: 409 lease_lost naming them in resources (the rest stays held
// until released). 200 {expires_at}.
func (s *Server) handleRenewLeases(c echo.Context) error {
	resources, token, err := s.leaseRequest(c)
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
	keys, back, err := s.leaseKeys(resources)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	var lost []string
	var expires time.Time
	for _, k := range keys {
		exp, err := s.cfg.Locker.Renew(ctx, k, token, ttl)
		switch {
		case errors.Is(err, locks.ErrLeaseLost):
			lost = append(lost, back[k])
		case err != nil:
			return err
		case expires.IsZero() || exp.Before(expires):
			expires = exp
		}
	}
	if len(lost) > 0 {
		s.leaseEvent(ctx, "lease.renew_failed", resources, map[string]any{"lost": lost})
		return &resourcesLost{resources: lost}
	}
	return s.send(c, http.StatusOK, renewed{ExpiresAt: timestamp(expires)})
}

// handleReleaseLeases: DELETE /v1/leases/{lease_id} (runtime), header
// Lease-Token. Every resource still held by the token is released; 204,
// or 409 lease_lost naming in resources what it no longer held. Another
// holder's lease is never touched.
func (s *Server) handleReleaseLeases(c echo.Context) error {
	resources, token, err := s.leaseRequest(c)
	if err != nil {
		return err
	}
	keys, back, err := s.leaseKeys(resources)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	var lost, freed []string
	for i := len(keys) - 1; i >= 0; i-- { // reverse order, like a group release
		_, err := s.cfg.Locker.Release(ctx, keys[i], token)
		switch {
		case errors.Is(err, locks.ErrLeaseLost):
			lost = append(lost, back[keys[i]])
		case err != nil:
			return err
		default:
			freed = append(freed, back[keys[i]])
		}
	}
	if len(freed) > 0 {
		slices.Sort(freed)
		s.leaseEvent(ctx, "lease.released", freed, map[string]any{})
	}
	if len(lost) > 0 {
		slices.Sort(lost)
		return &resourcesLost{resources: lost}
	}
	return c.NoContent(http.StatusNoContent)
}

// leaseRequest reads the lease id and the Lease-Token of a renew or release.
func (s *Server) leaseRequest(c echo.Context) (resources []string, token string, err error) {
	id, err := param(c, "lease_id")
	if err != nil {
		return nil, "", err
	}
	if resources, err = parseLeaseID(id); err != nil {
		return nil, "", err
	}
	if token, err = leaseToken(c); err != nil {
		return nil, "", err
	}
	return resources, token, nil
}

// leaseEvent queues an audit event of a generic lease (asynchronously,
// never slowing the lease path). The resource is the first one; details
// list them all.
func (s *Server) leaseEvent(ctx context.Context, action string, resources []string, details map[string]any) {
	details["resources"] = resources
	s.cfg.Events.Add(ctx, audit.Event{Action: action, Resource: "leases/" + resources[0]}, details)
}
