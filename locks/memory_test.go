package locks_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/promptd/promptd/locks"
)

// fakeClock is a settable clock for the memory backend.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestMemoryBackend_afterLeasesExpire_mapsShrinkToZero(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	b := locks.NewMemoryBackend(clock.now)
	t.Cleanup(func() { _ = b.Close() })
	keys := locks.Keys{Prefix: "mem"}
	const n = 1000
	for i := 0; i < n; i++ {
		k, _ := keys.Key("lease", "order:"+strconv.Itoa(i))
		g, err := b.Acquire(ctxT(t), k, locks.Request{Token: "tok-" + strconv.Itoa(i), Holder: "h", TTL: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 { // half released by token, half left to expire
			if _, err := b.Release(ctxT(t), k, g.Token, ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	if held, fences := locks.MemorySizes(b); held != n/2 || fences != n {
		t.Fatalf("while held: %d held, %d fences", held, fences)
	}
	clock.add(time.Minute)
	// Any call after the sweep period lets the backend drop what expired.
	other, _ := keys.Key("lease", "unrelated")
	if _, err := b.Holder(ctxT(t), other); err == nil {
		t.Fatal("unrelated key held")
	}
	if held, fences := locks.MemorySizes(b); held != 0 || fences != 0 {
		t.Fatalf("after every lease expired: %d held entries, %d fence counters (want 0, 0)", held, fences)
	}
}

func TestMemoryBackend_idle_sweepsExpiredEntriesByItself(t *testing.T) {
	b := locks.NewMemoryBackend(nil)
	t.Cleanup(func() { _ = b.Close() })
	keys := locks.Keys{Prefix: "mem"}
	for i := 0; i < 100; i++ {
		k, _ := keys.Key("lease", "idle:"+strconv.Itoa(i))
		if _, err := b.Acquire(ctxT(t), k, locks.Request{Token: "t", Holder: "h", TTL: 100 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second) // generous: the sweep runs about every second
	for {
		held, fences := locks.MemorySizes(b)
		if held == 0 && fences == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no call for 10s after the leases expired: %d held entries, %d fence counters remain", held, fences)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestMemoryBackend_fenceCounterDropped_nextFenceStillHigher(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	b := locks.NewMemoryBackend(clock.now)
	t.Cleanup(func() { _ = b.Close() })
	k, _ := locks.Keys{Prefix: "mem"}.Key("lease", "order:1")
	ctx := context.Background()
	grant := func(req locks.Request) int64 {
		t.Helper()
		req.Holder, req.TTL = "h", time.Second
		g, err := b.Acquire(ctx, k, req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Release(ctx, k, req.Token, ""); err != nil {
			t.Fatal(err)
		}
		return g.Fence
	}
	// Many grants within one clock tick: the counter carries them.
	last := grant(locks.Request{Token: "a"})
	for i := 0; i < 5; i++ {
		f := grant(locks.Request{Token: "b" + strconv.Itoa(i)})
		if f <= last {
			t.Fatalf("fence %d after %d within one tick", f, last)
		}
		last = f
	}
	// A floor far ahead of the clock: its counter is kept while the clock
	// is behind it, however long the key is free.
	ahead := clock.now().Add(time.Hour).UnixMicro()
	floored := grant(locks.Request{Token: "c", MinFence: ahead})
	clock.add(time.Minute)
	_, _ = b.Holder(ctx, k) // lets a sweep run
	if f := grant(locks.Request{Token: "d"}); f <= floored {
		t.Fatalf("fence %d after %d: a counter ahead of the clock was dropped", f, floored)
	} else {
		last = f
	}
	// Once the clock has passed it, the counter may go; fences still grow.
	clock.add(2 * time.Hour)
	_, _ = b.Holder(ctx, k)
	if _, fences := locks.MemorySizes(b); fences != 0 {
		t.Fatalf("%d fence counters kept after the clock passed them", fences)
	}
	if f := grant(locks.Request{Token: "e"}); f <= last {
		t.Fatalf("fence %d after %d once its counter was dropped", f, last)
	}
}
