package locks

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// callBound bounds the backend calls made on contexts that can never be
// cancelled (context.Background, context.WithoutCancel: releases, and the
// acquires of background jobs) without a context and a timer per call,
// which cost about as much client CPU as the rest of a release. Such calls
// share one deadline context per slot of timeout/16: a call started at t
// gets the first slot that ends at or after t + timeout, so it is bounded
// by timeout, and by at most timeout/16 more.
type callBound struct {
	timeout, slot time.Duration
	origin        time.Time // slot ends are measured from here (monotonic)

	mu  sync.Mutex // serialises making a new slot
	cur atomic.Pointer[boundSlot]
}

type boundSlot struct {
	end    time.Duration // since origin
	ctx    context.Context
	cancel context.CancelFunc // never needed: the deadline ends ctx
}

func newCallBound(timeout time.Duration) *callBound {
	return &callBound{timeout: timeout, slot: max(timeout/16, time.Microsecond), origin: time.Now()}
}

// context returns a context with parent's values that ends between timeout
// and timeout + timeout/16 from now. parent.Done() must be nil.
func (b *callBound) context(parent context.Context) context.Context {
	want := time.Since(b.origin) + b.timeout
	s := b.cur.Load()
	if s == nil || s.end < want {
		s = b.next(want)
	}
	if parent == context.Background() {
		return s.ctx
	}
	return &boundCtx{Context: s.ctx, values: parent}
}

func (b *callBound) next(want time.Duration) *boundSlot {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.cur.Load(); s != nil && s.end >= want {
		return s
	}
	end := (want/b.slot + 1) * b.slot
	ctx, cancel := context.WithDeadline(context.Background(), b.origin.Add(end))
	s := &boundSlot{end: end, ctx: ctx, cancel: cancel}
	b.cur.Store(s)
	return s
}

// boundCtx is a slot's context (deadline, Done, Err) with the values of
// the caller's.
type boundCtx struct {
	context.Context
	values context.Context
}

func (c *boundCtx) Value(key any) any { return c.values.Value(key) }

// AfterFunc lets contexts derived from c follow its end without a
// goroutine each (the context package looks for this method).
func (c *boundCtx) AfterFunc(f func()) func() bool { return context.AfterFunc(c.Context, f) }
