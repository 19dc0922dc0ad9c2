package locks

import (
	"context"
	"sync"
	"time"
)

// MemoryBackend keeps leases in process memory. It is correct only within
// one process (promptd's embedded and single-instance modes).
type MemoryBackend struct {
	now    func() time.Time
	notify *notifier

	mu     sync.Mutex
	held   map[string]*memEntry
	fences map[string]int64 // survive the entries, like the Redis counters
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
	return &MemoryBackend{now: now, notify: newNotifier(), held: map[string]*memEntry{}, fences: map[string]int64{}}
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
	now := b.now()
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
	f := max(b.fences[key]+1, now.UnixMicro(), req.MinFence+1)
	b.fences[key] = f
	e = &memEntry{token: req.Token, holder: req.Holder, fence: f, since: now, expires: now.Add(req.TTL), count: 1}
	b.held[key] = e
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
	now := b.now()
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
	e := b.live(key, b.now())
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
	now := b.now()
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

// Close does nothing; leases stay until they expire.
func (b *MemoryBackend) Close() error { return nil }
