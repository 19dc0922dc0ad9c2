package client

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Causes of a Held context's end (context.Cause), besides the *Error of a
// renewal that promptd refused (errors.Is(cause, ErrLeaseLost) for a lease
// taken over or expired on the server) and the parent context's own.
var (
	// ErrLeaseExpired: no renewal succeeded within the TTL (less a
	// margin) since the last one was sent, so the lease must be taken as
	// lost even though promptd could not say so.
	ErrLeaseExpired = errors.New("promptd: no lease renewal succeeded within the lease's TTL")
	// ErrLeaseReleased: Release was called.
	ErrLeaseReleased = errors.New("promptd: the lease was released")
)

// HoldOption configures HoldLease.
type HoldOption func(*LeaseRequest)

// HoldWait makes HoldLease wait up to d for the current holder's release.
func HoldWait(d time.Duration) HoldOption {
	return func(r *LeaseRequest) { r.Mode, r.Wait = ModeWait, d }
}

// HoldPreempt makes HoldLease take the lease over from its holder.
func HoldPreempt() HoldOption { return func(r *LeaseRequest) { r.Mode = ModePreempt } }

// Held is a session lease kept alive by a renewal every TTL/3. Its
// Context ends when the lease is lost: a renewal answered lease_lost (taken
// over, or expired), no renewal succeeded within the TTL less a margin,
// the parent context ended (the lease is then released with a fresh
// context), or Release was called. Work done under the lease uses
// Context and writes with Fence, so a holder that lost it stops, and its
// late writes are refused (stale_fence).
type Held struct {
	c         *Client
	sessionID string
	lease     SessionLease
	ttl       time.Duration
	parent    context.Context
	holding
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	relOnce  sync.Once
	relErr   error

	mu        sync.Mutex
	expiresAt time.Time
}

// HoldLease acquires sessionID's lease for holder with ttl (100 ms..60 s;
// 0: 5 s), in mode reject unless an option says otherwise, and keeps it
// alive until Release or loss.
func (c *Client) HoldLease(ctx context.Context, sessionID, holder string, ttl time.Duration, opts ...HoldOption) (*Held, error) {
	if ttl <= 0 {
		ttl = 5 * time.Second
	}
	req := LeaseRequest{Holder: holder, TTL: ttl}
	for _, o := range opts {
		o(&req)
	}
	sent := time.Now()
	l, err := c.AcquireSessionLease(ctx, sessionID, req)
	if err != nil {
		return nil, err
	}
	if req.Mode == ModeWait {
		sent = time.Now() // the grant may have come at the end of the wait
	}
	h := &Held{c: c, sessionID: sessionID, lease: *l, ttl: ttl, parent: ctx,
		stop: make(chan struct{}), done: make(chan struct{}), expiresAt: l.ExpiresAt}
	h.ctx, h.cancel = context.WithCancelCause(ctx)
	go h.keepalive(sent)
	return h, nil
}

// holding is what a held lease and a held claim share: a context that
// ends, with its cause, when the hold is lost or ended.
type holding struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// Context ends when the hold is lost or ended; context.Cause says why.
func (h *holding) Context() context.Context { return h.ctx }

// Done is closed when the hold is lost or ended.
func (h *holding) Done() <-chan struct{} { return h.ctx.Done() }

// Err is why the hold ended (nil while it is held).
func (h *holding) Err() error {
	if h.ctx.Err() == nil {
		return nil
	}
	return context.Cause(h.ctx)
}

// Fence is the lease's fencing token: send it with every write.
func (h *Held) Fence() int64 { return h.lease.Fence }

// Token is the lease's token (re-entry: LeaseRequest.Token).
func (h *Held) Token() string { return h.lease.Token }

// LeaseID names the lease.
func (h *Held) LeaseID() string { return h.lease.LeaseID }

// Condition is the condition of a write under the lease.
func (h *Held) Condition(expectedRevision int64) WriteCondition {
	return Fenced(expectedRevision, h.lease.Fence)
}

// ExpiresAt is when promptd said the lease expires, as of the last renewal.
func (h *Held) ExpiresAt() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.expiresAt
}

// Release stops the keepalive and frees the lease (with ctx, which should
// not be the lease's own Context). It is safe to call more than once; a
// lease already lost answers ErrLeaseLost.
func (h *Held) Release(ctx context.Context) error {
	h.stopOnce.Do(func() { close(h.stop) })
	<-h.done
	h.release(ctx)
	h.cancel(ErrLeaseReleased)
	return h.relErr
}

func (h *Held) release(ctx context.Context) {
	h.relOnce.Do(func() { h.relErr = h.c.ReleaseSessionLease(ctx, h.sessionID, h.lease.Token) })
}

// keepalive renews at TTL/3, each renewal bounded by TTL/4 and by the
// deadline, and ends the lease's context on loss. The lease is certainly
// valid until the last successful grant or renewal was sent plus the TTL;
// the deadline is that less a margin of TTL/5.
func (h *Held) keepalive(lastSent time.Time) {
	defer close(h.done)
	interval, timeout, margin := h.ttl/3, h.ttl/4, h.ttl/5
	deadlineAt := lastSent.Add(h.ttl - margin)
	next := time.NewTimer(interval)
	defer next.Stop()
	deadline := time.NewTimer(time.Until(deadlineAt))
	defer deadline.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-h.ctx.Done():
			if h.parent.Err() != nil { // the caller is done: free the lease with a fresh context
				ctx, cancel := context.WithTimeout(context.Background(), h.ttl)
				h.release(ctx)
				cancel()
			}
			return
		case <-deadline.C:
			h.cancel(ErrLeaseExpired)
			return
		case <-next.C:
			sent := time.Now()
			ctx, cancel := context.WithDeadline(h.ctx, minTime(sent.Add(timeout), deadlineAt))
			exp, err := h.c.RenewSessionLease(ctx, h.sessionID, h.lease.Token, h.ttl)
			cancel()
			var e *Error
			switch {
			case err == nil:
				h.mu.Lock()
				h.expiresAt = exp
				h.mu.Unlock()
				deadlineAt = sent.Add(h.ttl - margin)
				deadline.Reset(time.Until(deadlineAt))
				next.Reset(interval)
			case errors.As(err, &e) && !e.Temporary():
				h.cancel(err) // lease_lost, session gone or closed: promptd said no
				return
			case !time.Now().Before(deadlineAt):
				h.cancel(ErrLeaseExpired)
				return
			default:
				next.Reset(interval / 2) // unreachable: try again sooner
			}
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
