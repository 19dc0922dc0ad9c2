package locks

import (
	"context"
	"time"
)

// Mode says what an acquire does when the key is already held.
type Mode int

const (
	// ModeAcquire grants the key only when it is free (or already held by the
	// same token: a retried call gets the same grant back).
	ModeAcquire Mode = iota
	// ModePreempt takes the key over from another holder with a higher fence.
	ModePreempt
	// ModeReenter re-enters a lease by presenting its current token: hold
	// count + 1, same fence. A token that is not current fails with ErrLeaseLost.
	ModeReenter
)

// Request is one acquire sent to a Backend.
type Request struct {
	Token    string        // the owner token, chosen by the caller before sending
	Holder   string        // a name shown in holder queries; never a secret
	TTL      time.Duration // lease time-to-live
	Mode     Mode
	MinFence int64  // the granted fence is greater than this (a storage floor)
	Nonce    string // makes a retried ModeReenter count once
	// Detached: no Manager keeps the lease alive (WithoutKeepalive); its
	// holder renews and releases it by token. The etcd backend puts such a
	// key on a lease of its own instead of the process's session.
	Detached bool
}

// Grant is a backend's view of a held key.
type Grant struct {
	Token     string // empty unless the caller owns the grant
	Holder    string
	Fence     int64
	Since     time.Time     // when the current holder was first granted the key
	TTL       time.Duration // how long the grant is sure to last from the call (at most the TTL asked)
	Count     int           // hold count kept by the backend (token re-entries)
	Preempted bool          // the grant took the key over from another holder
}

// Backend stores leases. Implementations: the Redis backend (NewRedisBackend)
// and the memory backend (NewMemoryBackend). Each call is bounded by the
// backend's own timeout as well as by ctx. All methods are safe for
// concurrent use.
type Backend interface {
	// Acquire grants key per req. When another owner holds the key (and
	// req.Mode is not ModePreempt) it returns a *HeldError.
	Acquire(ctx context.Context, key string, req Request) (Grant, error)
	// Renew extends key's TTL if token holds it, else ErrLeaseLost.
	Renew(ctx context.Context, key, token string, ttl time.Duration) (Grant, error)
	// Release drops one hold of key by token; the key is freed when the
	// backend's hold count reaches zero. Not holding it: ErrLeaseLost.
	// nonce makes a retried release count once.
	Release(ctx context.Context, key, token, nonce string) (freed bool, err error)
	// Holder reports who holds key (Token left empty), or ErrNotHeld.
	Holder(ctx context.Context, key string) (Grant, error)
	// Watch returns a channel that receives a value after key is released
	// (possibly spuriously), and a function to stop watching.
	Watch(key string) (<-chan struct{}, func())
	// Ping checks the backend is reachable.
	Ping(ctx context.Context) error
	// Close frees the backend's own resources (subscriptions), not the leases.
	Close() error
}
