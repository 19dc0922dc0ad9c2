package client

import (
	"context"
	"net/http"
	"time"
)

// LeasesRequest asks for one lease on 1..16 business resources, all or
// nothing. TTL is 100 ms..60 s (0: 5 s); Wait up to 30 s.
type LeasesRequest struct {
	Resources []string
	Holder    string
	TTL       time.Duration
	Wait      time.Duration
}

// Leases is a granted generic lease: one token, a fence per resource.
type Leases struct {
	LeaseID   string           `json:"lease_id"`
	Token     string           `json:"token"`
	Fences    map[string]int64 `json:"fences"`
	ExpiresAt time.Time        `json:"expires_at"`
}

// LeaseConflict is one held resource of a lease_held answer.
type LeaseConflict struct {
	Resource  string    `json:"resource"`
	Holder    string    `json:"holder"`
	ExpiresAt time.Time `json:"expires_at"`
}

// AcquireLeases takes a lease on every resource of req or on none: held
// ones are ErrLeaseHeld, whose Conflicts name them.
func (c *Client) AcquireLeases(ctx context.Context, req LeasesRequest) (*Leases, error) {
	body := map[string]any{"resources": req.Resources, "holder": req.Holder}
	if req.TTL > 0 {
		body["ttl_ms"] = req.TTL.Milliseconds()
	}
	if req.Wait > 0 {
		body["wait_ms"] = req.Wait.Milliseconds()
	}
	var l Leases
	_, err := c.do(ctx, call{method: http.MethodPost, path: "/v1/leases", body: body}, &l)
	return ret(&l, err)
}

// RenewLeases extends a generic lease to ttl from now: ErrLeaseLost when
// any resource was lost (the rest stays held until released).
func (c *Client) RenewLeases(ctx context.Context, leaseID, token string, ttl time.Duration) (time.Time, error) {
	return c.renew(ctx, "/v1/leases/"+seg(leaseID)+"/renew", token, ttl)
}

// ReleaseLeases frees a generic lease; ErrLeaseLost for what it no longer
// held.
func (c *Client) ReleaseLeases(ctx context.Context, leaseID, token string) error {
	_, err := c.do(ctx, call{method: http.MethodDelete, path: "/v1/leases/" + seg(leaseID),
		header: map[string]string{"Lease-Token": token}}, nil)
	return err
}
