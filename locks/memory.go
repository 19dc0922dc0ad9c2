package locks

import (
	"context"
	"sync"
	"time"
)

// memorySweepEvery is how often the memory backend drops what expired: on
// the first call after the period, and by a timer while it holds entries,
// so its maps shrink even when no call comes.
const memorySweepEvery = time.Second

// MemoryBackend keeps leases in process memory. It is correct only within
// one process (promptd's embedded and single-instance modes).
//
// Expired entries are removed on access and by a sweep about every second.
// Fence counters go with them once the clock has passed them: a fence is
// max(counter + 1, clock in µs, floor + 1), and the clock here is
// monotonic (the time at start plus the monotonic time since), so once it
// is past a dropped counter every later fence is above it.
type MemoryBackend struct {
	now    func() time.Time
	epoch  time.Time // the clock at start; fences count µs from here
	notify *notifier

	mu        sync.Mutex
	held      map[string]*memEntry
	fences    map[string]int64 // kept while held or ahead of the clock
	nextSweep time.Time
	sweeper   *time.Timer // armed while the maps hold anything; nil when not
	closed    bool
}

type memEntry struct {
	token, holder, nonce string
	fence                int64
	since, expires       time.Time
	count                int
}

// NewMemoryBackend returns an empty memory backend. now may be nil (time.Now).
func NewMemoryBackend(now func() time.Time) *MemoryBackend {
	if now == nil {
		now = time.Now
	}
	return &MemoryBackend{now: now, epoch: now(), notify: newNotifier(), held: map[string]*memEntry{}, fences: map[string]int64{}}
}

// micros is t in µs since the Unix epoch, measured on the monotonic clock
// from the backend's start (time.Now's readings carry it), so a step of the
// wall clock never moves fences backwards.
func (b *MemoryBackend) micros(t time.Time) int64 {
	return b.epoch.UnixMicro() + t.Sub(b.epoch).Microseconds()
}

// clock returns the time for one call and sweeps when a period has passed;
// call with mu held.
func (b *MemoryBackend) clock() time.Time {
	now := b.now()
	if !now.Before(b.nextSweep) {
		b.sweepLocked(now)
	}
	return now
}

// sweepLocked drops expired entries, and the fence counters of free keys
// that the clock has passed; call with mu held.
func (b *MemoryBackend) sweepLocked(now time.Time) {
	for k, e := range b.held {
		if !now.Before(e.expires) {
			delete(b.held, k)
		}
	}
	us := b.micros(now)
	for k, f := range b.fences {
		if f < us && b.held[k] == nil {
			delete(b.fences, k)
		}
	}
	b.nextSweep = now.Add(memorySweepEvery)
}

// armSweeper starts the sweep timer if it is not running; call with mu held.
func (b *MemoryBackend) armSweeper() {
	if b.sweeper == nil && !b.closed {
		b.sweeper = time.AfterFunc(memorySweepEvery, b.sweepTick)
	}
}

func (b *MemoryBackend) sweepTick() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.sweepLocked(b.now())
	if len(b.held) == 0 && len(b.fences) == 0 {
		b.sweeper = nil // armed again by the next grant
		return
	}
	b.sweeper.Reset(memorySweepEvery)
}

// live returns the unexpired entry of key; call with mu held.
func (b *MemoryBackend) live(key string, now time.Time) *memEntry {
	e := b.held[key]
	if e != nil && !now.Before(e.expires) {
		delete(b.held, key)
		return nil
	}
	return e
}

// Acquire mirrors acquire.lua.
func (b *MemoryBackend) Acquire(ctx context.Context, key string, req Request) (Grant, error) {
	if err := ctx.Err(); err != nil {
		return Grant{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock()
	e := b.live(key, now)
	if e != nil && e.token == req.Token {
		if req.Mode == ModeReenter && e.nonce != req.Nonce {
			e.count++
			e.nonce = req.Nonce
		}
		e.expires = now.Add(req.TTL)
		return e.grant(true, req.TTL), nil
	}
	if req.Mode == ModeReenter {
		return Grant{}, ErrLeaseLost
	}
	preempted := false
	if e != nil {
		if req.Mode != ModePreempt {
			return Grant{}, &HeldError{Conflicts: []Conflict{{Key: key, Holder: e.holder, Fence: e.fence, ExpiresAt: e.expires}}}
		}
		preempted = true
	}
	f := max(b.fences[key]+1, b.micros(now), req.MinFence+1)
	b.fences[key] = f
	e = &memEntry{token: req.Token, holder: req.Holder, fence: f, since: now, expires: now.Add(req.TTL), count: 1}
	b.held[key] = e
	b.armSweeper()
	g := e.grant(true, req.TTL)
	g.Preempted = preempted
	return g, nil
}

func (e *memEntry) grant(owner bool, ttl time.Duration) Grant {
	g := Grant{Holder: e.holder, Fence: e.fence, Since: e.since, TTL: ttl, Count: e.count}
	if owner {
		g.Token = e.token
	}
	return g
}

// Renew extends key if token holds it.
func (b *MemoryBackend) Renew(ctx context.Context, key, token string, ttl time.Duration) (Grant, error) {
	if err := ctx.Err(); err != nil {
		return Grant{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock()
	e := b.live(key, now)
	if e == nil || e.token != token {
		return Grant{}, ErrLeaseLost
	}
	e.expires = now.Add(ttl)
	return e.grant(true, ttl), nil
}

// Release drops one hold of key by token.
func (b *MemoryBackend) Release(ctx context.Context, key, token, nonce string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	b.mu.Lock()
	e := b.live(key, b.clock())
	if e == nil || e.token != token {
		b.mu.Unlock()
		return false, ErrLeaseLost
	}
	if nonce != "" && e.nonce == nonce {
		// a retried release whose first attempt already counted
		b.mu.Unlock()
		return false, nil
	}
	if e.count > 1 {
		e.count--
		e.nonce = nonce
		b.mu.Unlock()
		return false, nil
	}
	delete(b.held, key)
	b.mu.Unlock()
	b.notify.fire(key)
	return true, nil
}

// Holder reports who holds key.
func (b *MemoryBackend) Holder(ctx context.Context, key string) (Grant, error) {
	if err := ctx.Err(); err != nil {
		return Grant{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock()
	e := b.live(key, now)
	if e == nil {
		return Grant{}, ErrNotHeld
	}
	return e.grant(false, e.expires.Sub(now)), nil
}

// Watch registers for the release of key.
func (b *MemoryBackend) Watch(key string) (<-chan struct{}, func()) { return b.notify.watch(key) }

// Ping always succeeds.
func (b *MemoryBackend) Ping(context.Context) error { return nil }

// Close stops the sweep timer; leases stay until they expire, and calls
// still drop what expired.
func (b *MemoryBackend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	if b.sweeper != nil {
		b.sweeper.Stop()
		b.sweeper = nil
	}
	return nil
}
