package locks

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrReleased is the cause of a lease context ended by Release.
var ErrReleased = errors.New("locks: lease released")

// releaseTimeout bounds cleanup calls, which never run on a cancelled context.
const releaseTimeout = 2 * time.Second

type leaseState int

const (
	stateHeld leaseState = iota
	stateReleased
	stateLost
)

// Lease is a held lock. Its Context is cancelled (and Done closed) when the
// lease is released or lost; Err tells which. Methods are nil-safe.
type Lease struct {
	m         *Manager
	key       string
	token     string
	holder    string
	fence     int64
	ttl       time.Duration
	since     time.Time
	acquired  time.Time
	keepalive bool

	ctx    context.Context
	cancel context.CancelCauseFunc

	mu       sync.Mutex
	state    leaseState
	count    int
	deadline time.Time // local: send time of the last grant or renewal + TTL - margin
	timer    *time.Timer

	next  time.Time // next renewal, owned by the keepalive loop
	index int       // position in the keepalive heap, -1 when not queued
}

// leaseChain lets nested Acquire calls find the leases held by a context.
type leaseChain struct {
	l      *Lease
	parent *leaseChain
}

func heldIn(ctx context.Context, key string) *Lease {
	c, _ := ctx.Value(leaseCtxKey{}).(*leaseChain)
	for ; c != nil; c = c.parent {
		if c.l.key == key {
			return c.l
		}
	}
	return nil
}

func newLease(parent context.Context, m *Manager, key string, g Grant, ttl time.Duration, sent time.Time, keepalive bool) *Lease {
	l := &Lease{m: m, key: key, token: g.Token, holder: g.Holder, fence: g.Fence, ttl: ttl,
		since: g.Since, acquired: time.Now(), keepalive: keepalive, count: 1, index: -1}
	l.deadline = sent.Add(ttl - m.margin(ttl))
	base, cancel := context.WithCancelCause(context.Background())
	// The context also carries the leases held by parent, so a nested
	// Acquire under l.Context() re-enters any of them.
	p, _ := parent.Value(leaseCtxKey{}).(*leaseChain)
	l.ctx = context.WithValue(base, leaseCtxKey{}, &leaseChain{l: l, parent: p})
	l.cancel = cancel
	l.mu.Lock()
	l.timer = time.AfterFunc(time.Until(l.deadline), l.expire)
	l.mu.Unlock()
	return l
}

// Key is the lock key.
func (l *Lease) Key() string {
	if l == nil {
		return ""
	}
	return l.key
}

// Token is the owner token. Treat it as a secret: it can release the lease.
func (l *Lease) Token() string {
	if l == nil {
		return ""
	}
	return l.token
}

// Fence is the fencing token of this grant; pass it to fenced storage writes.
func (l *Lease) Fence() int64 {
	if l == nil {
		return 0
	}
	return l.fence
}

// Holder is the name the lease was granted under.
func (l *Lease) Holder() string {
	if l == nil {
		return ""
	}
	return l.holder
}

// Since is when the backend first granted the key to this owner.
func (l *Lease) Since() time.Time {
	if l == nil {
		return time.Time{}
	}
	return l.since
}

// Context is cancelled when the lease is released or lost. Acquire calls
// made with it (or a context derived from it) re-enter this lease.
func (l *Lease) Context() context.Context {
	if l == nil {
		return canceledCtx
	}
	return l.ctx
}

// Done is closed when the lease is released or lost.
func (l *Lease) Done() <-chan struct{} { return l.Context().Done() }

// Err is nil while the lease is held, ErrLeaseLost after a loss and
// ErrReleased after Release.
func (l *Lease) Err() error {
	if l == nil {
		return ErrLeaseLost
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch l.state {
	case stateLost:
		return ErrLeaseLost
	case stateReleased:
		return ErrReleased
	}
	return nil
}

// ExpiresAt is the local deadline: the holder must stop by then.
func (l *Lease) ExpiresAt() time.Time {
	if l == nil {
		return time.Time{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

// Count is the in-process hold count.
func (l *Lease) Count() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count
}

func (l *Lease) reenter() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != stateHeld {
		return false
	}
	l.count++
	return true
}

// Release drops one hold; at zero the key is freed in the backend with a
// fresh context bounded by releaseTimeout (ctx's values kept, its
// cancellation ignored). Releasing a lost lease returns ErrLeaseLost.
func (l *Lease) Release(ctx context.Context) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	switch {
	case l.state == stateLost:
		l.mu.Unlock()
		return ErrLeaseLost
	case l.state == stateReleased:
		l.mu.Unlock()
		return nil
	case l.count > 1:
		l.count--
		l.mu.Unlock()
		return nil
	}
	return l.finish(ctx)
}

// releaseAll frees the key whatever the hold count (Close, Group.Release).
func (l *Lease) releaseAll(ctx context.Context) error {
	l.mu.Lock()
	switch l.state {
	case stateLost:
		l.mu.Unlock()
		return ErrLeaseLost
	case stateReleased:
		l.mu.Unlock()
		return nil
	}
	return l.finish(ctx)
}

// finish is called with l.mu held and releases it.
func (l *Lease) finish(ctx context.Context) error {
	l.state = stateReleased
	l.timer.Stop()
	l.mu.Unlock()
	l.m.ka.remove(l)
	l.m.forget(l)
	l.cancel(ErrReleased)
	l.m.opts.Metrics.held(l.key, time.Since(l.acquired).Seconds())

	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	_, err := l.m.b.Release(rctx, l.key, l.token, newToken())
	if err == nil && l.m.opts.Hooks.OnReleased != nil {
		l.m.opts.Hooks.OnReleased(Event{Key: l.key, Holder: l.holder, Fence: l.fence})
	}
	return err
}

// extend records a successful renewal sent at sent; false if the lease is
// no longer held or the reply came too late to be of use.
func (l *Lease) extend(sent time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != stateHeld {
		return false
	}
	d := sent.Add(l.ttl - l.m.margin(l.ttl))
	if d.After(l.deadline) {
		l.deadline = d
		l.timer.Reset(time.Until(d))
	}
	return true
}

// expire runs at the local deadline.
func (l *Lease) expire() {
	l.mu.Lock()
	if l.state != stateHeld || time.Now().Before(l.deadline) {
		l.mu.Unlock() // extended meanwhile
		return
	}
	l.lose("expired", ErrLeaseLost)
}

// lost is called when a renewal found the key gone or taken.
func (l *Lease) lost(cause error) {
	l.mu.Lock()
	if l.state != stateHeld {
		l.mu.Unlock()
		return
	}
	l.lose("taken", cause)
}

// lose is called with l.mu held and releases it.
func (l *Lease) lose(reason string, cause error) {
	l.state = stateLost
	l.timer.Stop()
	l.mu.Unlock()
	l.m.ka.remove(l)
	l.m.forget(l)
	l.cancel(ErrLeaseLost)
	m := l.m.opts
	m.Metrics.lostLease(l.key, reason)
	m.Metrics.held(l.key, time.Since(l.acquired).Seconds())
	m.Logger.Warn("lease lost", "key", l.key, "holder", l.holder, "fence", l.fence, "reason", reason)
	if m.Hooks.OnLost != nil {
		m.Hooks.OnLost(Event{Key: l.key, Holder: l.holder, Fence: l.fence, Err: cause})
	}
}

var canceledCtx = func() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(ErrLeaseLost)
	return ctx
}()
