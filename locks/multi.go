package locks

import (
	"context"
	"errors"
	"slices"
	"time"
)

// Group is a set of leases taken together by AcquireAll. Its context ends
// when any member is released or lost.
type Group struct {
	leases []*Lease
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// AcquireAll takes every key or none. Keys are deduplicated and taken in
// sorted order, one backend call per key (keys on different Redis Cluster
// slots work). On a conflict everything taken is released, the call waits
// for the blocking key's release (up to WithWait's deadline) and retries the
// whole set. A final conflict is a *HeldError naming the blocking key.
func (m *Manager) AcquireAll(ctx context.Context, keys []string, ttl time.Duration, opts ...Option) (*Group, error) {
	keys = slices.Clone(keys)
	slices.Sort(keys)
	keys = slices.Compact(keys)
	if len(keys) == 0 {
		return nil, errors.New("locks: no keys")
	}
	o := m.options(opts)
	if o.mode != ModeAcquire {
		return nil, errors.New("locks: AcquireAll supports neither preempt nor token re-entry")
	}
	wait := o.wait
	// Each member is taken without waiting; the group waits as a whole.
	member := append(slices.Clone(opts), WithWait(0))
	start := time.Now()
	deadline := start.Add(wait)
	defer func() { m.opts.Metrics.waited(keys[0], time.Since(start).Seconds()) }()

	watches := make(map[string]<-chan struct{}, len(keys))
	for _, k := range keys {
		ch, stop := m.b.Watch(k)
		defer stop()
		watches[k] = ch
	}
	waiting := false
	for attempt := 0; ; attempt++ {
		leases, err := m.tryAll(ctx, keys, ttl, member)
		if err == nil {
			return newGroup(leases), nil
		}
		var held *HeldError
		if !errors.As(err, &held) || wait <= 0 {
			return nil, err
		}
		if !waiting {
			if err := m.startWaiting(keys[0]); err != nil {
				return nil, err
			}
			waiting = true
			defer m.stopWaiting()
		}
		c := held.Conflicts[0]
		if !m.pause(ctx, watches[c.Key], deadline, c.ExpiresAt, attempt) {
			return nil, err
		}
	}
}

// tryAll takes keys in order; on any failure it releases what it took.
func (m *Manager) tryAll(ctx context.Context, keys []string, ttl time.Duration, opts []Option) ([]*Lease, error) {
	leases := make([]*Lease, 0, len(keys))
	for _, k := range keys {
		l, err := m.Acquire(ctx, k, ttl, opts...)
		if err != nil {
			for _, t := range leases {
				_ = t.releaseAll(ctx)
			}
			return nil, err
		}
		leases = append(leases, l)
	}
	return leases, nil
}

func newGroup(leases []*Lease) *Group {
	base, cancel := context.WithCancelCause(context.Background())
	var chain *leaseChain
	for _, l := range leases {
		chain = &leaseChain{l: l, parent: chain}
		lctx := l.Context()
		context.AfterFunc(lctx, func() { cancel(context.Cause(lctx)) })
	}
	return &Group{leases: leases, ctx: context.WithValue(base, leaseCtxKey{}, chain), cancel: cancel}
}

// Leases are the members, in key order.
func (g *Group) Leases() []*Lease {
	if g == nil {
		return nil
	}
	return g.leases
}

// Fences maps each key to its fence.
func (g *Group) Fences() map[string]int64 {
	out := map[string]int64{}
	for _, l := range g.Leases() {
		out[l.key] = l.fence
	}
	return out
}

// Context ends when any member is released or lost.
func (g *Group) Context() context.Context {
	if g == nil {
		return canceledCtx
	}
	return g.ctx
}

// Done is closed when any member is released or lost.
func (g *Group) Done() <-chan struct{} { return g.Context().Done() }

// Err is nil while every member is held, else the first member's error.
func (g *Group) Err() error {
	for _, l := range g.Leases() {
		if err := l.Err(); err != nil {
			return err
		}
	}
	return nil
}

// Release releases every member (in reverse order), reporting the members
// that were no longer held with ErrLeaseLost.
func (g *Group) Release(ctx context.Context) error {
	if g == nil {
		return nil
	}
	var errs []error
	for i := len(g.leases) - 1; i >= 0; i-- {
		errs = append(errs, g.leases[i].releaseAll(ctx))
	}
	g.cancel(ErrReleased)
	return errors.Join(errs...)
}
