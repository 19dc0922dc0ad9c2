package locks

import (
	"container/heap"
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// keepalive is the one renewal loop of a Manager: a heap of leases ordered
// by their next renewal (at TTL/3 after the last grant or renewal was sent).
// A lease joins it at its first renewal, handed over by its own timer, so
// the many leases released sooner never touch the loop. Each renewal runs
// in its own goroutine with a timeout of TTL/4, so a slow backend call
// never delays the renewal of another lease.
type keepalive struct {
	m *Manager

	mu      sync.Mutex
	h       leaseHeap
	wake    chan struct{}
	done    chan struct{}
	started bool
	armed   time.Time // when the loop's timer fires; zero: not armed
	stopped bool
	wg      sync.WaitGroup
}

func newKeepalive(m *Manager) *keepalive {
	return &keepalive{m: m, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

func (k *keepalive) schedule(l *Lease, at time.Time) {
	k.mu.Lock()
	if k.stopped || l.Err() != nil {
		k.mu.Unlock()
		return
	}
	l.next = at
	if l.index >= 0 {
		heap.Fix(&k.h, l.index)
	} else {
		heap.Push(&k.h, l)
	}
	if !k.started {
		k.started = true
		k.wg.Add(1)
		go k.loop()
	}
	wake := k.armed.IsZero() || at.Before(k.armed)
	k.mu.Unlock()
	if !wake {
		return
	}
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

func (k *keepalive) remove(l *Lease) {
	k.mu.Lock()
	if l.index >= 0 {
		heap.Remove(&k.h, l.index)
	}
	k.mu.Unlock()
}

func (k *keepalive) stop() {
	k.mu.Lock()
	if k.stopped {
		k.mu.Unlock()
		return
	}
	k.stopped = true
	close(k.done)
	k.mu.Unlock()
	k.wg.Wait()
}

func (k *keepalive) loop() {
	defer k.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		k.mu.Lock()
		now := time.Now()
		var due []*Lease
		for len(k.h) > 0 && !k.h[0].next.After(now) {
			due = append(due, heap.Pop(&k.h).(*Lease))
		}
		wait := time.Hour
		if len(k.h) > 0 {
			wait = k.h[0].next.Sub(now)
		}
		k.armed = now.Add(wait)
		if len(k.h) == 0 {
			k.armed = time.Time{}
		}
		k.mu.Unlock()
		for _, l := range due {
			k.wg.Add(1)
			go k.renew(l)
		}
		timer.Reset(wait)
		select {
		case <-k.done:
			return
		case <-k.wake:
		case <-timer.C:
		}
	}
}

// renew sends one renewal unless the lease was released or lost meanwhile.
func (k *keepalive) renew(l *Lease) {
	defer k.wg.Done()
	if l.Err() != nil {
		return // never renew after release or loss
	}
	sent := time.Now()
	span := l.background("lock.keepalive")
	ctx, cancel := context.WithTimeout(trace.ContextWithSpan(context.Background(), span), max(l.ttl/4, time.Millisecond))
	g, err := k.m.b.Renew(ctx, l.key, l.token, l.ttl)
	cancel()
	endSpan(span, err)
	k.m.opts.Metrics.renewed(l.key, err == nil)
	switch {
	case err == nil:
		if l.extend(sent, g.TTL) {
			k.schedule(l, sent.Add(l.ttl/3))
		}
	case errors.Is(err, ErrLeaseLost):
		l.lost(err)
	default:
		if h := k.m.opts.Hooks.OnRenewFailed; h != nil {
			h(Event{Key: l.key, Holder: l.holder, Fence: l.fence, Err: err})
		}
		// Try again soon; the deadline timer ends the lease if none succeeds.
		k.schedule(l, time.Now().Add(max(l.ttl/10, time.Millisecond)))
	}
}

type leaseHeap []*Lease

func (h leaseHeap) Len() int           { return len(h) }
func (h leaseHeap) Less(i, j int) bool { return h[i].next.Before(h[j].next) }
func (h leaseHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *leaseHeap) Push(x any) {
	l := x.(*Lease)
	l.index = len(*h)
	*h = append(*h, l)
}
func (h *leaseHeap) Pop() any {
	old := *h
	l := old[len(old)-1]
	old[len(old)-1] = nil
	l.index = -1
	*h = old[:len(old)-1]
	return l
}
