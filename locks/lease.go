package locks

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// ErrReleased is the cause of a lease context ended by Release.
var ErrReleased = errors.New("locks: lease released")

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
	parent    *leaseChain       // leases held by the context Acquire was called with
	origin    trace.SpanContext // the acquire's span: renewals and loss link to it

	mu       sync.Mutex
	state    leaseState
	count    int
	deadline time.Time // local: send time of the last grant or renewal + TTL - margin
	// timer fires at the first renewal of a lease with keepalive, which
	// hands it to the keepalive loop (renewing), and from then on, or from
	// the start without keepalive, at the deadline. A lease released
	// before its first renewal never touches the keepalive loop.
	timer    *time.Timer
	renewing bool
	// ctx is made on the first call of Context (or Done): most leases are
	// released without anybody asking for it.
	ctx    context.Context
	cancel context.CancelCauseFunc

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

func newLease(parent context.Context, m *Manager, key string, g Grant, ttl time.Duration, sent time.Time, keepalive bool,
	origin trace.SpanContext) *Lease {
	l := &Lease{m: m, key: key, token: g.Token, holder: g.Holder, fence: g.Fence, ttl: ttl,
		since: g.Since, acquired: sent, keepalive: keepalive, count: 1, index: -1, origin: origin}
	// Context also carries the leases held by parent, so a nested Acquire
	// under l.Context() re-enters any of them.
	l.parent, _ = parent.Value(leaseCtxKey{}).(*leaseChain)
	l.deadline = sent.Add(sure(ttl, g.TTL) - m.margin(ttl))
	at := l.deadline
	if keepalive {
		at = sent.Add(ttl / 3)
	}
	l.mu.Lock()
	l.timer = time.AfterFunc(time.Until(at), l.tick)
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
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx == nil {
		base, cancel := context.WithCancelCause(context.Background())
		l.ctx = context.WithValue(base, leaseCtxKey{}, &leaseChain{l: l, parent: l.parent})
		l.cancel = cancel
		if err := l.errLocked(); err != nil {
			cancel(err)
		}
	}
	return l.ctx
}

// Done is closed when the lease is released or lost.
func (l *Lease) Done() <-chan struct{} { return l.Context().Done() }

// Err is nil while the lease is held, ErrLeaseLost after a loss and
// ErrReleased after Release. For a lease granted without keepalive,
// ErrLeaseLost says only that its local deadline passed (its holder may
// have renewed it by token elsewhere).
func (l *Lease) Err() error {
	if l == nil {
		return ErrLeaseLost
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.errLocked()
}

func (l *Lease) errLocked() error {
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

// Release drops one hold; at zero the key is freed in the backend with
// ctx's values but not its cancellation (the backend bounds the call).
// Releasing a lost lease returns ErrLeaseLost.
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
	renewing, cancel := l.end(stateReleased)
	l.m.unregister(l, renewing)
	if cancel != nil {
		cancel(ErrReleased)
	}
	if mt := l.m.opts.Metrics; mt != nil {
		mt.held(l.key, time.Since(l.acquired).Seconds())
	}

	if ctx.Done() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	_, err := l.m.b.Release(ctx, l.key, l.token, newNonce())
	if err == nil && l.m.opts.Hooks.OnReleased != nil {
		l.m.opts.Hooks.OnReleased(Event{Key: l.key, Holder: l.holder, Fence: l.fence})
	}
	return err
}

// end is called with l.mu held and releases it: the lease leaves the held
// state. It reports whether the keepalive loop may have the lease queued
// and the context's cancel function, if a context was made.
func (l *Lease) end(s leaseState) (renewing bool, cancel context.CancelCauseFunc) {
	l.state = s
	l.timer.Stop()
	renewing, cancel = l.renewing, l.cancel
	l.mu.Unlock()
	return renewing, cancel
}

// extend records a successful renewal sent at sent; false if the lease is
// no longer held or the reply came too late to be of use.
func (l *Lease) extend(sent time.Time, granted time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != stateHeld {
		return false
	}
	d := sent.Add(sure(l.ttl, granted) - l.m.margin(l.ttl))
	if d.After(l.deadline) {
		l.deadline = d
		l.timer.Reset(time.Until(d))
	}
	return true
}

// tick runs when l.timer fires: at the first renewal of a lease with
// keepalive, which it hands to the keepalive loop, else at the deadline.
func (l *Lease) tick() {
	l.mu.Lock()
	switch {
	case l.state != stateHeld:
		l.mu.Unlock()
	case l.keepalive && !l.renewing:
		l.renewing = true
		l.timer.Reset(time.Until(l.deadline))
		l.mu.Unlock()
		l.m.ka.schedule(l, time.Now())
	case time.Now().Before(l.deadline):
		l.mu.Unlock() // extended meanwhile
	case !l.keepalive:
		l.expire()
	default:
		l.lose("expired", ErrLeaseLost)
	}
}

// expire ends a lease without keepalive at its local deadline; called with
// l.mu held, it releases it. Such a lease is held by a client that renews
// and releases it by token, perhaps through another instance, which this
// process never hears of: passing the deadline says nothing about the
// lease, so it is neither logged nor counted as lost. Err reports
// ErrLeaseLost from now on: this process no longer vouches for the grant.
func (l *Lease) expire() {
	renewing, cancel := l.end(stateLost)
	l.m.unregister(l, renewing)
	if cancel != nil {
		cancel(ErrLeaseLost)
	}
}

// releasedByToken ends a lease with keepalive whose key a release by token
// (Locker.Release) freed: it was released, not lost, and the backend call
// is already done.
func (l *Lease) releasedByToken() {
	l.mu.Lock()
	if l.state != stateHeld {
		l.mu.Unlock()
		return
	}
	renewing, cancel := l.end(stateReleased)
	l.m.unregister(l, renewing)
	if cancel != nil {
		cancel(ErrReleased)
	}
	if mt := l.m.opts.Metrics; mt != nil {
		mt.held(l.key, time.Since(l.acquired).Seconds())
	}
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

// lose is called with l.mu held and releases it: a lease this process keeps
// alive was lost, which is logged (WARN), counted and reported to OnLost.
func (l *Lease) lose(reason string, cause error) {
	renewing, cancel := l.end(stateLost)
	l.m.unregister(l, renewing)
	if cancel != nil {
		cancel(ErrLeaseLost)
	}
	m := l.m.opts
	span := l.background("lock.lost")
	span.SetAttributes(attrReason.String(reason), attrHolder.String(l.holder))
	span.End()
	m.Metrics.lostLease(l.key, reason)
	if m.Metrics != nil {
		m.Metrics.held(l.key, time.Since(l.acquired).Seconds())
	}
	m.Logger.Warn("lease lost", "key", l.key, "holder", l.holder, "fence", l.fence, "reason", reason)
	if m.Hooks.OnLost != nil {
		m.Hooks.OnLost(Event{Key: l.key, Holder: l.holder, Fence: l.fence, Err: cause})
	}
}

// sure is how long a grant or renewal sent with ttl lasts: the backend's
// Grant.TTL when it says less (etcd: the session lease's keepalive is
// behind), else ttl.
func sure(ttl, granted time.Duration) time.Duration {
	if granted > 0 && granted < ttl {
		return granted
	}
	return ttl
}

var canceledCtx = func() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(ErrLeaseLost)
	return ctx
}()
