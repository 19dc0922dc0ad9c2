package client

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Causes of a HeldClaim context's end (context.Cause), besides the *Error
// of a heartbeat promptd refused (errors.Is(cause, ErrStaleFence) for a
// claim released or reclaimed and taken by another, ErrClaimExpired) and
// the parent context's own.
var (
	// ErrClaimLost: no heartbeat succeeded within the claim's TTL (less a
	// margin) since the last one was sent, so the claim must be taken as
	// lost even though promptd could not say so.
	ErrClaimLost = errors.New("promptd: no claim heartbeat succeeded within the claim's TTL")
	// ErrClaimEnded: the holder ended the claim (a write to a state that
	// ends it, or Release).
	ErrClaimEnded = errors.New("promptd: the claim was ended by its holder")
)

// HeldClaim is a board claim kept alive by a heartbeat every TTL/3. Its
// Context ends when the claim is lost: a heartbeat answered stale_fence
// or claim_expired (reclaimed, released, taken), none succeeded within the
// TTL less a margin, or the parent context ended; or when the holder ends
// it (Update to a state that ends the claim, Release). Work done under
// the claim uses Context, and its writes (Update) carry the claim's
// fence, so a holder that lost the claim stops and its late writes are
// refused (stale_fence).
type HeldClaim struct {
	c      *Client
	board  string
	id     string
	fence  int64
	ttl    time.Duration
	parent context.Context
	holding
	done chan struct{}

	mu  sync.Mutex
	rec Record
}

// ClaimAndHold claims the next record of board (see ClaimNext) and keeps
// the claim alive; nil, nil when no record came within req.Wait.
func (c *Client) ClaimAndHold(ctx context.Context, board string, req ClaimRequest) (*HeldClaim, error) {
	sent := time.Now()
	cl, err := c.ClaimNext(ctx, board, req)
	if err != nil || cl == nil {
		return nil, err
	}
	if req.Wait > 0 {
		sent = time.Now() // the grant may have come at the end of the wait
	}
	return c.hold(ctx, board, cl, sent), nil
}

// HoldClaim keeps a claim that was just granted alive (its TTL counted
// from now).
func (c *Client) HoldClaim(ctx context.Context, board string, cl *Claim) *HeldClaim {
	return c.hold(ctx, board, cl, time.Now())
}

func (c *Client) hold(ctx context.Context, board string, cl *Claim, sent time.Time) *HeldClaim {
	ttl := time.Duration(cl.Record.ClaimTTLMs) * time.Millisecond
	h := &HeldClaim{c: c, board: board, id: cl.Record.ID, fence: cl.Fence, ttl: ttl, parent: ctx, done: make(chan struct{}), rec: cl.Record}
	h.ctx, h.cancel = context.WithCancelCause(ctx)
	go h.keepalive(sent)
	return h
}

// Fence is the claim's fencing token.
func (h *HeldClaim) Fence() int64 { return h.fence }

// Record is the record as of the claim or the holder's last write.
func (h *HeldClaim) Record() Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rec
}

// Update writes the record under the claim: its revision as of the last
// write, and the claim's fence. A write whose record is no longer claimed
// (a terminal state, the claim's from state) ends the claim.
func (h *HeldClaim) Update(ctx context.Context, state string, payload any) (*Record, error) {
	h.mu.Lock()
	rev := h.rec.Revision
	h.mu.Unlock()
	r, err := h.c.UpdateRecord(ctx, h.board, h.id, RecordUpdate{ExpectedRevision: rev, State: state, Payload: payload, Fence: h.fence})
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.rec = *r
	h.mu.Unlock()
	if r.Owner == nil {
		h.cancel(ErrClaimEnded)
		<-h.done
	}
	return r, nil
}

// Release stops the heartbeat and hands the record back (with ctx, which
// should not be the claim's own Context).
func (h *HeldClaim) Release(ctx context.Context) error {
	h.cancel(ErrClaimEnded)
	<-h.done
	_, err := h.c.ReleaseRecord(ctx, h.board, h.id, h.fence)
	return err
}

// Stop stops the heartbeat and leaves the claim to expire.
func (h *HeldClaim) Stop() {
	h.cancel(ErrClaimEnded)
	<-h.done
}

// keepalive heartbeats at TTL/3, each bounded by TTL/4 and by the
// deadline, and ends the claim's context on loss. The claim is certainly
// valid until the last successful claim or heartbeat was sent plus the
// TTL (the server counts it from when it answered); the deadline is that
// less a margin of TTL/5.
func (h *HeldClaim) keepalive(lastSent time.Time) {
	defer close(h.done)
	interval, timeout, margin := h.ttl/3, h.ttl/4, h.ttl/5
	deadlineAt := lastSent.Add(h.ttl - margin)
	next := time.NewTimer(interval)
	defer next.Stop()
	deadline := time.NewTimer(time.Until(deadlineAt))
	defer deadline.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-deadline.C:
			h.cancel(ErrClaimLost)
			return
		case <-next.C:
			sent := time.Now()
			ctx, cancel := context.WithDeadline(h.ctx, minTime(sent.Add(timeout), deadlineAt))
			_, err := h.c.HeartbeatRecord(ctx, h.board, h.id, h.fence, h.ttl)
			cancel()
			var e *Error
			switch {
			case err == nil:
				deadlineAt = sent.Add(h.ttl - margin)
				deadline.Reset(time.Until(deadlineAt))
				next.Reset(interval)
			case h.ctx.Err() != nil:
				return
			case errors.As(err, &e) && !e.Temporary():
				h.cancel(err) // stale_fence, claim_expired, record gone: promptd said no
				return
			case !time.Now().Before(deadlineAt):
				h.cancel(ErrClaimLost)
				return
			default:
				next.Reset(interval / 2) // unreachable: try again sooner
			}
		}
	}
}

// ClaimLoop claims records of board one after another and runs work on
// each under a HeldClaim until ctx ends (then it returns nil). work
// writes its result with HeldClaim.Update (to a state that ends the
// claim, such as done). When work returns an error the claim is
// released, so the record goes back for another claimer; a claim work
// left open is released too. Each claim waits up to req.Wait (0: 10 s).
// Over the quota the loop waits for Retry-After; while promptd cannot be
// reached, a second between tries. An error promptd answers that a retry
// cannot fix (board_not_found, forbidden, ...) ends the loop with it.
func (c *Client) ClaimLoop(ctx context.Context, board string, req ClaimRequest, work func(ctx context.Context, h *HeldClaim) error) error {
	if c.baseErr != nil {
		return c.baseErr
	}
	if req.Wait <= 0 {
		req.Wait = 10 * time.Second
	}
	for ctx.Err() == nil {
		h, err := c.ClaimAndHold(ctx, board, req)
		var e *Error
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.As(err, &e) && e.Temporary():
			if werr := c.sleep(ctx, max(e.RetryAfter, 100*time.Millisecond)); werr != nil {
				return nil
			}
			continue
		case err != nil && !errors.As(err, &e):
			// promptd unreachable (after the client's own retries): a
			// worker outlives a restart or a network blip
			if werr := c.sleep(ctx, time.Second); werr != nil {
				return nil
			}
			continue
		case err != nil:
			return err
		case h == nil:
			continue
		}
		werr := work(h.Context(), h)
		if h.Err() == nil || werr != nil {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(h.ttl, time.Second))
			_ = h.Release(rctx) // lost meanwhile: the answer says so, and it does not matter
			cancel()
		}
	}
	return nil
}
