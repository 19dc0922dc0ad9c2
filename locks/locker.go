package locks

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Locker is the lease lock service promptd's packages depend on. *Manager
// implements it over any Backend.
type Locker interface {
	// Acquire takes key for ttl. By default it fails at once with a
	// *HeldError when another owner holds key; WithWait waits.
	Acquire(ctx context.Context, key string, ttl time.Duration, opts ...Option) (*Lease, error)
	// AcquireAll takes every key or none, in sorted order.
	AcquireAll(ctx context.Context, keys []string, ttl time.Duration, opts ...Option) (*Group, error)
	// Holder reports who holds key, or ErrNotHeld.
	Holder(ctx context.Context, key string) (Info, error)
	// Renew extends a lease held elsewhere (say, by an HTTP client) by token.
	Renew(ctx context.Context, key, token string, ttl time.Duration) (time.Time, error)
	// Release drops one hold of a lease held elsewhere by token; freed
	// reports whether the key is now free.
	Release(ctx context.Context, key, token string) (freed bool, err error)
	// Ping checks the backend.
	Ping(ctx context.Context) error
	// Close releases the leases this process holds with keepalive and stops.
	Close(ctx context.Context) error
}

// Info describes the holder of a key.
type Info struct {
	Key       string
	Holder    string
	Fence     int64
	Since     time.Time
	ExpiresAt time.Time
	Count     int
}

// Event is passed to hooks.
type Event struct {
	Key    string
	Holder string
	Fence  int64
	Err    error // the cause, for OnLost and OnRenewFailed
}

// Hooks are called synchronously; keep them cheap (queue audit writes).
// OnLost is called for leases this process keeps alive; leases granted
// without keepalive (held by HTTP clients by token) are never reported
// lost: their holder renews or releases them, perhaps elsewhere.
type Hooks struct {
	OnAcquired    func(Event)
	OnPreempted   func(Event) // a grant took the key over from another holder
	OnReleased    func(Event)
	OnLost        func(Event)
	OnRenewFailed func(Event)
}

// Options configure a Manager.
type Options struct {
	// Holder names this process in holder queries (PROMPTD_INSTANCE_ID).
	Holder string
	// SafetyMargin is subtracted from TTL when computing the local deadline
	// of a lease; zero means TTL/10 (at least 1ms).
	SafetyMargin time.Duration
	Metrics      *Metrics
	Hooks        Hooks
	Logger       *slog.Logger
	// Backoff bounds the fallback polling while waiting; zero values mean
	// 5ms base and 250ms cap.
	BackoffBase, BackoffCap time.Duration
	// MaxWaiters bounds the acquires of this process that wait at once for
	// a held key (PROMPTD_LEASE_MAX_WAITERS); zero means DefaultMaxWaiters,
	// negative means no limit. One more waiter gets a *TooManyWaitersError
	// at once; acquires that do not wait are never limited.
	MaxWaiters int
}

// DefaultMaxWaiters is the waiter limit when Options.MaxWaiters is zero.
const DefaultMaxWaiters = 10000

// Manager implements Locker over a Backend: keepalive, reentrancy, waiting,
// multi-resource acquisition, metrics and hooks.
type Manager struct {
	b    Backend
	opts Options
	log  *slog.Logger
	ka   *keepalive

	mu      sync.Mutex
	held    map[heldKey][]*Lease // leases with keepalive, released at Close
	closed  atomic.Bool          // set under mu, read without it by checkOpen
	waiting atomic.Int64         // acquires waiting for a held key
}

// heldKey finds the leases this process keeps alive for a key and token, so
// that a release by token reaches them.
type heldKey struct{ key, token string }

var _ Locker = (*Manager)(nil)

// New returns a Manager over b.
func New(b Backend, opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.BackoffBase <= 0 {
		opts.BackoffBase = 5 * time.Millisecond
	}
	if opts.BackoffCap <= 0 {
		opts.BackoffCap = 250 * time.Millisecond
	}
	if opts.MaxWaiters == 0 {
		opts.MaxWaiters = DefaultMaxWaiters
	}
	m := &Manager{b: b, opts: opts, log: opts.Logger, held: map[heldKey][]*Lease{}}
	m.ka = newKeepalive(m)
	return m
}

// NewMemory returns a Manager over a fresh memory backend.
func NewMemory(opts Options) *Manager { return New(NewMemoryBackend(nil), opts) }

// NewRedis returns a Manager over a Redis backend.
func NewRedis(c RedisClient, ro RedisOptions, opts Options) *Manager {
	return New(NewRedisBackend(c, ro), opts)
}

// Backend returns the manager's backend.
func (m *Manager) Backend() Backend { return m.b }

// Option adjusts one Acquire or AcquireAll.
type Option func(*acquireOpts)

type acquireOpts struct {
	wait      time.Duration
	mode      Mode
	token     string
	holder    string
	minFence  int64
	keepalive bool
}

// WithWait waits up to d for a held key, woken by its release.
func WithWait(d time.Duration) Option { return func(o *acquireOpts) { o.wait = d } }

// WithPreempt takes the key over from its current holder with a higher fence.
func WithPreempt() Option { return func(o *acquireOpts) { o.mode = ModePreempt } }

// WithToken re-enters a lease by presenting its current token (hold count
// + 1, same fence); a token that is not current fails with ErrLeaseLost.
func WithToken(token string) Option {
	return func(o *acquireOpts) { o.token = token; o.mode = ModeReenter }
}

// WithOwnerToken acquires with a token chosen by the caller instead of a
// random one: the grants of one AcquireAll then share it (one token renews
// and releases them all), and a retried acquire with the same token gets
// the same grant. Keep it secret and unguessable (128 random bits).
func WithOwnerToken(token string) Option {
	return func(o *acquireOpts) {
		if o.mode != ModeReenter {
			o.token = token
		}
	}
}

// WithHolder names the holder of this lease (default Options.Holder).
func WithHolder(name string) Option { return func(o *acquireOpts) { o.holder = name } }

// WithMinFence makes the granted fence greater than f (a storage floor).
func WithMinFence(f int64) Option { return func(o *acquireOpts) { o.minFence = f } }

// WithoutKeepalive grants a detached lease: no renewals, not released at
// Close. promptd uses it for leases held by HTTP clients, which renew and
// release by token.
func WithoutKeepalive() Option { return func(o *acquireOpts) { o.keepalive = false } }

func (m *Manager) options(opts []Option) acquireOpts {
	o := acquireOpts{holder: m.opts.Holder, keepalive: true}
	if len(opts) == 0 {
		return o // o does not escape to the heap on this path
	}
	p := new(acquireOpts)
	*p = o
	for _, f := range opts {
		f(p)
	}
	return *p
}

type leaseCtxKey struct{}

// Acquire implements Locker. When ctx comes from a Lease's Context (or a
// Group's) that holds key, the lease is re-entered in process: hold count
// + 1, no backend call, and the same *Lease is returned.
func (m *Manager) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...Option) (*Lease, error) {
	if ttl <= 0 {
		return nil, errors.New("locks: ttl must be positive")
	}
	if l := heldIn(ctx, key); l != nil && l.reenter() {
		return l, nil
	}
	o := m.options(opts)
	if err := m.checkOpen(); err != nil {
		return nil, err
	}
	start := time.Now()
	deadline := start.Add(o.wait)
	bctx, span := startSpan(ctx, "lock.acquire")
	if span.IsRecording() {
		span.SetAttributes(attrKey.String(key), attrMode.String(o.mode.String()))
	}
	var watch <-chan struct{}
	if o.wait > 0 { // registered before the first attempt, so no release is missed
		var stop func()
		watch, stop = m.b.Watch(key)
		defer stop()
	}
	var l *Lease
	var err error
	defer func() { traceWait(span, start, err) }()
	waiting := false
	for attempt := 0; ; attempt++ {
		l, err = m.try(bctx, ctx, key, ttl, o)
		if err == nil || o.wait <= 0 {
			break
		}
		var held *HeldError
		if !errors.As(err, &held) {
			break
		}
		if !waiting {
			if err = m.startWaiting(key); err != nil {
				break
			}
			waiting = true
			defer m.stopWaiting()
		}
		if !m.pause(ctx, watch, deadline, held.Conflicts[0].ExpiresAt, attempt) {
			break
		}
	}
	if m.opts.Metrics != nil {
		m.opts.Metrics.waited(key, time.Since(start).Seconds())
	}
	return l, err
}

// try sends one acquire (under sctx, the acquire's span) and builds the
// lease (under ctx).
func (m *Manager) try(sctx, ctx context.Context, key string, ttl time.Duration, o acquireOpts) (*Lease, error) {
	token := o.token
	if token == "" {
		token = newToken()
	}
	req := Request{Token: token, Holder: o.holder, TTL: ttl, Mode: o.mode, MinFence: o.minFence, Detached: !o.keepalive}
	if o.mode == ModeReenter {
		req.Nonce = newNonce()
	}
	m.opts.Metrics.attempt(key)
	sent := time.Now()
	g, err := m.b.Acquire(sctx, key, req)
	if err != nil {
		switch {
		case errors.Is(err, ErrHeld):
			m.opts.Metrics.failure(key, "held")
		case errors.Is(err, ErrLeaseLost):
			m.opts.Metrics.failure(key, "lost")
		default:
			m.opts.Metrics.failure(key, "unavailable")
		}
		return nil, err
	}
	l := newLease(ctx, m, key, g, ttl, sent, o.keepalive, trace.SpanContextFromContext(sctx))
	traceAcquired(sctx, key, g)
	ev := Event{Key: key, Holder: g.Holder, Fence: g.Fence}
	if g.Preempted && m.opts.Hooks.OnPreempted != nil {
		m.opts.Hooks.OnPreempted(ev)
	}
	if m.opts.Hooks.OnAcquired != nil {
		m.opts.Hooks.OnAcquired(ev)
	}
	if o.keepalive {
		m.mu.Lock()
		closed := m.closed.Load()
		if !closed {
			hk := heldKey{key, token}
			m.held[hk] = append(m.held[hk], l)
		}
		m.mu.Unlock()
		if closed {
			_ = l.Release(context.Background())
			return nil, ErrClosed
		}
		// The lease's own timer hands it to the keepalive loop at its
		// first renewal (TTL/3), so a short hold never reaches the loop.
	}
	return l, nil
}

// pause waits for a release of the watched key, the holder's expiry, a
// full-jitter backoff step or the deadline, whichever is first. It reports
// false when the deadline or ctx ended the wait.
func (m *Manager) pause(ctx context.Context, watch <-chan struct{}, deadline, holderExpires time.Time, attempt int) bool {
	now := time.Now()
	if !now.Before(deadline) {
		return false
	}
	d := fullJitter(m.opts.BackoffBase, m.opts.BackoffCap, attempt)
	if until := holderExpires.Sub(now) + time.Millisecond; until > 0 && until < d {
		d = until
	}
	if rest := deadline.Sub(now); rest < d {
		d = rest
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-watch:
		return true
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Holder implements Locker.
func (m *Manager) Holder(ctx context.Context, key string) (Info, error) {
	g, err := m.b.Holder(ctx, key)
	if err != nil {
		return Info{}, err
	}
	return Info{Key: key, Holder: g.Holder, Fence: g.Fence, Since: g.Since, ExpiresAt: time.Now().Add(g.TTL), Count: g.Count}, nil
}

// Renew implements Locker. A token that no longer holds key (the lease ran
// to its TTL or was taken over) is ErrLeaseLost, counted and logged at
// debug level as a token op, never as a lost lease: for a lease held by a
// client it is the client's news, not a loss of promptd's own.
func (m *Manager) Renew(ctx context.Context, key, token string, ttl time.Duration) (time.Time, error) {
	ctx, span := startSpan(ctx, "lock.renew")
	if span.IsRecording() {
		span.SetAttributes(attrKey.String(key))
	}
	sent := time.Now()
	g, err := m.b.Renew(ctx, key, token, ttl)
	if err == nil && span.IsRecording() {
		span.SetAttributes(attrFence.Int64(g.Fence))
	}
	endSpan(span, err)
	switch {
	case err == nil:
		m.opts.Metrics.renewed(key, true)
	case errors.Is(err, ErrLeaseLost):
		m.tokenLost(key, "renew")
	default:
		m.opts.Metrics.renewed(key, false)
	}
	if err != nil {
		return time.Time{}, err
	}
	return sent.Add(ttl), nil
}

// Release implements Locker. When it frees a key that this process keeps
// alive under token, that lease ends as released (not lost).
func (m *Manager) Release(ctx context.Context, key, token string) (bool, error) {
	ctx, span := startSpan(ctx, "lock.release")
	freed, err := m.b.Release(ctx, key, token, newNonce())
	if span.IsRecording() {
		span.SetAttributes(attrKey.String(key), attribute.Bool("promptd.lock.freed", freed))
	}
	endSpan(span, err)
	if errors.Is(err, ErrLeaseLost) {
		m.tokenLost(key, "release")
	}
	if err == nil && freed {
		for _, l := range m.heldBy(key, token) {
			l.releasedByToken()
		}
		if m.opts.Hooks.OnReleased != nil {
			m.opts.Hooks.OnReleased(Event{Key: key})
		}
	}
	return freed, err
}

// tokenLost records a renewal or release by token that found the token no
// longer holding key.
func (m *Manager) tokenLost(key, op string) {
	m.opts.Metrics.tokenLost(key, op)
	m.log.Debug("lease not held by the token", "key", key, "op", op)
}

// heldBy returns the leases this process keeps alive for key and token.
func (m *Manager) heldBy(key, token string) []*Lease {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.held) == 0 {
		return nil
	}
	return slices.Clone(m.held[heldKey{key, token}])
}

// Waiters is how many acquires of this process are waiting for a held key.
func (m *Manager) Waiters() int { return int(m.waiting.Load()) }

// startWaiting counts one more waiter, or returns a *TooManyWaitersError
// when the limit is reached.
func (m *Manager) startWaiting(key string) error {
	n := m.waiting.Add(1)
	if limit := m.opts.MaxWaiters; limit > 0 && n > int64(limit) {
		m.waiting.Add(-1)
		m.opts.Metrics.failure(key, "too_many_waiters")
		return &TooManyWaitersError{Limit: limit}
	}
	m.opts.Metrics.addWaiters(1)
	return nil
}

func (m *Manager) stopWaiting() {
	m.waiting.Add(-1)
	m.opts.Metrics.addWaiters(-1)
}

// Ping implements Locker.
func (m *Manager) Ping(ctx context.Context) error { return m.b.Ping(ctx) }

// Close releases every lease this process holds with keepalive (with ctx's
// values, not its cancellation; each backend call is bounded by the
// backend's timeout), stops the keepalive loop and closes the backend.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.closed.Load() {
		m.mu.Unlock()
		return nil
	}
	m.closed.Store(true)
	leases := make([]*Lease, 0, len(m.held))
	for _, ls := range m.held {
		leases = append(leases, ls...)
	}
	m.mu.Unlock()
	var errs []error
	for _, l := range leases {
		if err := l.releaseAll(ctx); err != nil && !errors.Is(err, ErrLeaseLost) {
			errs = append(errs, err)
		}
	}
	m.ka.stop()
	errs = append(errs, m.b.Close())
	return errors.Join(errs...)
}

func (m *Manager) checkOpen() error {
	if m.closed.Load() {
		return ErrClosed
	}
	return nil
}

// unregister takes a lease that left the held state out of the keepalive
// loop (if it may have reached it) and out of the leases Close releases.
func (m *Manager) unregister(l *Lease, renewing bool) {
	if renewing {
		m.ka.remove(l)
	}
	if l.keepalive {
		m.mu.Lock()
		hk := heldKey{l.key, l.token}
		if ls := slices.DeleteFunc(m.held[hk], func(o *Lease) bool { return o == l }); len(ls) > 0 {
			m.held[hk] = ls
		} else {
			delete(m.held, hk)
		}
		m.mu.Unlock()
	}
}

func (m *Manager) margin(ttl time.Duration) time.Duration {
	if m.opts.SafetyMargin > 0 {
		return m.opts.SafetyMargin
	}
	return max(ttl/10, time.Millisecond)
}

// NewToken returns a random owner token (128 bits, URL-safe).
func NewToken() string { return newToken() }

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Nonces tell a retried release or re-entry from a new one. They must be
// unique, not secret: a random prefix per process and a counter.
var (
	noncePrefix = newToken() + "."
	nonceSeq    atomic.Uint64
)

func newNonce() string {
	var b [48]byte
	n := copy(b[:], noncePrefix)
	return string(strconv.AppendUint(b[:n], nonceSeq.Add(1), 36))
}
