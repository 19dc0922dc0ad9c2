package locks_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promptd/promptd/locks"
)

// world is one shared lock store seen by two processes, a and b.
type world struct {
	a, b   *locks.Manager
	keys   locks.Keys
	counts *countingBackend // wraps a's backend
}

type newBackend func(t *testing.T) locks.Backend

// newWorld builds two managers over one store; shared makes the second
// backend (memory: the same instance; Redis: a second client).
func newWorld(t *testing.T, mk func(t *testing.T, prefix string) (locks.Backend, locks.Backend), opts locks.Options) *world {
	t.Helper()
	var r [4]byte
	_, _ = rand.Read(r[:])
	keys := locks.Keys{Prefix: "t" + hex.EncodeToString(r[:])}
	ba, bb := mk(t, keys.Prefix)
	counts := &countingBackend{Backend: ba}
	oa, ob := opts, opts
	oa.Holder, ob.Holder = "proc-a", "proc-b"
	w := &world{a: locks.New(counts, oa), b: locks.New(bb, ob), keys: keys, counts: counts}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = w.a.Close(ctx)
		_ = w.b.Close(ctx)
	})
	return w
}

func (w *world) key(t *testing.T, id string) string {
	t.Helper()
	k, err := w.keys.Key("lease", id)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// countingBackend counts calls, to show waiting is not a busy loop and no
// renewal is sent after a loss.
type countingBackend struct {
	locks.Backend
	acquires, renews atomic.Int64
	mu               sync.Mutex
	renewSent        []time.Time // send times of successful renewals
	onRenew          func(key string)
}

func (c *countingBackend) Acquire(ctx context.Context, key string, req locks.Request) (locks.Grant, error) {
	c.acquires.Add(1)
	return c.Backend.Acquire(ctx, key, req)
}

func (c *countingBackend) Renew(ctx context.Context, key, token string, ttl time.Duration) (locks.Grant, error) {
	c.renews.Add(1)
	c.mu.Lock()
	hook := c.onRenew
	c.mu.Unlock()
	if hook != nil {
		hook(key)
	}
	sent := time.Now()
	g, err := c.Backend.Renew(ctx, key, token, ttl)
	if err == nil {
		c.mu.Lock()
		c.renewSent = append(c.renewSent, sent)
		c.mu.Unlock()
	}
	return g, err
}

func (c *countingBackend) lastRenewSent() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.renewSent) == 0 {
		return time.Time{}
	}
	return c.renewSent[len(c.renewSent)-1]
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// suiteTiming says how a backend's server-side expiry differs from the
// TTL asked: etcd rounds TTLs up to whole seconds (at least the cluster's
// minimum) and its leader checks for expired leases every 500 ms.
type suiteTiming struct {
	expiryGrace time.Duration // added to how long a waiter waits for an expiry
}

// runSuite is the behaviour every backend must show.
func runSuite(t *testing.T, mk func(t *testing.T, prefix string) (locks.Backend, locks.Backend), timing ...suiteTiming) {
	w := func(t *testing.T) *world { return newWorld(t, mk, locks.Options{}) }
	var tm suiteTiming
	if len(timing) > 0 {
		tm = timing[0]
	}

	t.Run("Acquire_free_grantsTokenFenceAndExpiry", func(t *testing.T) {
		w := w(t)
		l, err := w.a.Acquire(ctxT(t), w.key(t, "r1"), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release(context.Background())
		if l.Token() == "" || l.Fence() <= 0 || l.Holder() != "proc-a" {
			t.Fatalf("lease token=%q fence=%d holder=%q", l.Token(), l.Fence(), l.Holder())
		}
		if l.Fence() >= 1<<53 {
			t.Fatalf("fence %d not below 2^53", l.Fence())
		}
		if d := time.Until(l.ExpiresAt()); d <= 0 || d > time.Second {
			t.Fatalf("expires in %v", d)
		}
	})

	t.Run("Acquire_held_isRejectedWithHolder", func(t *testing.T) {
		w := w(t)
		k := w.key(t, "r1")
		l, err := w.a.Acquire(ctxT(t), k, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release(context.Background())
		_, err = w.b.Acquire(ctxT(t), k, time.Second)
		var held *locks.HeldError
		if !errors.As(err, &held) || !errors.Is(err, locks.ErrHeld) {
			t.Fatalf("err = %v, want HeldError", err)
		}
		c := held.Conflicts[0]
		if c.Key != k || c.Holder != "proc-a" || c.Fence != l.Fence() || time.Until(c.ExpiresAt) <= 0 {
			t.Fatalf("conflict = %+v", c)
		}
	})

	t.Run("Fence_growsStrictlyPerKey", func(t *testing.T) {
		w := w(t)
		k := w.key(t, "r1")
		var last int64
		for i := 0; i < 200; i++ {
			m := w.a
			if i%2 == 1 {
				m = w.b
			}
			l, err := m.Acquire(ctxT(t), k, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if l.Fence() <= last {
				t.Fatalf("grant %d: fence %d after %d", i, l.Fence(), last)
			}
			last = l.Fence()
			if err := l.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("ReleaseAndRenew_byOtherToken_neverTouchTheHolder", func(t *testing.T) {
		w := w(t)
		k := w.key(t, "r1")
		l, err := w.a.Acquire(ctxT(t), k, time.Second, locks.WithoutKeepalive())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.b.Release(ctxT(t), k, "not-the-token"); !errors.Is(err, locks.ErrLeaseLost) {
			t.Fatalf("release by other token: %v", err)
		}
		if _, err := w.b.Renew(ctxT(t), k, "not-the-token", time.Minute); !errors.Is(err, locks.ErrLeaseLost) {
			t.Fatalf("renew by other token: %v", err)
		}
		info, err := w.b.Holder(ctxT(t), k)
		if err != nil || info.Fence != l.Fence() || time.Until(info.ExpiresAt) > time.Second {
			t.Fatalf("holder after foreign calls: %+v, %v", info, err)
		}
		freed, err := w.b.Release(ctxT(t), k, l.Token())
		if err != nil || !freed {
			t.Fatalf("release by token: %v %v", freed, err)
		}
	})

	t.Run("Tokens_compareExactly_whateverBytesTheyHold", func(t *testing.T) {
		w := w(t)
		k := w.key(t, "r1")
		const tok = "ab 1 - - :7"
		l, err := w.a.Acquire(ctxT(t), k, time.Second, locks.WithOwnerToken(tok),
			locks.WithHolder("runtime 7: eu-west"), locks.WithoutKeepalive())
		if err != nil || l.Token() != tok {
			t.Fatalf("acquire: %v token %q", err, l.Token())
		}
		for _, other := range []string{"ab", "ab 1", "ab 1 - -", "ab 1 - - ", "ab 1 - - :", "ab 1 - - :7 ", "ab 1 - - :77", "b 1 - - :7", ""} {
			if _, err := w.b.Release(ctxT(t), k, other); !errors.Is(err, locks.ErrLeaseLost) {
				t.Fatalf("release by %q: %v", other, err)
			}
			if _, err := w.b.Renew(ctxT(t), k, other, time.Minute); !errors.Is(err, locks.ErrLeaseLost) {
				t.Fatalf("renew by %q: %v", other, err)
			}
			if _, err := w.b.Acquire(ctxT(t), k, time.Second, locks.WithToken(other), locks.WithoutKeepalive()); !errors.Is(err, locks.ErrLeaseLost) {
				t.Fatalf("re-entry by %q: %v", other, err)
			}
		}
		info, err := w.b.Holder(ctxT(t), k)
		if err != nil || info.Holder != "runtime 7: eu-west" || info.Fence != l.Fence() || info.Count != 1 {
			t.Fatalf("holder: %+v %v", info, err)
		}
		if freed, err := w.b.Release(ctxT(t), k, tok); err != nil || !freed {
			t.Fatalf("release by the token: %v %v", freed, err)
		}
	})

	t.Run("Fence_aboveMinFenceThenAboveCounter", func(t *testing.T) {
		w := w(t)
		k := w.key(t, "r1")
		floor := time.Now().Add(24 * time.Hour).UnixMicro()
		before := time.Now().Add(-time.Second)
		l, err := w.a.Acquire(ctxT(t), k, time.Second, locks.WithMinFence(floor), locks.WithoutKeepalive())
		if err != nil {
			t.Fatal(err)
		}
		if l.Fence() != floor+1 || l.Since().Before(before) || l.Since().After(time.Now().Add(time.Second)) {
			t.Fatalf("fence %d since %v, want %d and now", l.Fence(), l.Since(), floor+1)
		}
		_ = l.Release(context.Background())
		l2, err := w.b.Acquire(ctxT(t), k, time.Second, locks.WithoutKeepalive())
		if err != nil {
			t.Fatal(err)
		}
		defer l2.Release(context.Background())
		if l2.Fence() != floor+2 || l2.Since().Before(before) {
			t.Fatalf("next fence %d since %v, want %d (the counter is above the clock)", l2.Fence(), l2.Since(), floor+2)
		}
	})

	t.Run("RetriedReentryAndRelease_countOnce", func(t *testing.T) {
		w := w(t)
		k := w.key(t, "r1")
		b := w.a.Backend()
		req := locks.Request{Token: locks.NewToken(), Holder: "h", TTL: time.Second}
		first, err := b.Acquire(ctxT(t), k, req)
		if err != nil || first.Count != 1 {
			t.Fatalf("acquire: %+v %v", first, err)
		}
		re := req
		re.Mode, re.Nonce = locks.ModeReenter, "n-1"
		for i := 0; i < 2; i++ { // the second is a retry with the same nonce
			g, err := b.Acquire(ctxT(t), k, re)
			if err != nil || g.Count != 2 || g.Fence != first.Fence {
				t.Fatalf("re-entry %d: %+v %v", i, g, err)
			}
		}
		for i := 0; i < 2; i++ {
			if freed, err := b.Release(ctxT(t), k, req.Token, "n-2"); err != nil || freed {
				t.Fatalf("release %d of two holds: freed=%v %v", i, freed, err)
			}
		}
		if info, err := b.Holder(ctxT(t), k); err != nil || info.Count != 1 {
			t.Fatalf("after a retried release: %+v %v", info, err)
		}
		if freed, err := b.Release(ctxT(t), k, req.Token, "n-3"); err != nil || !freed {
			t.Fatalf("last release: freed=%v %v", freed, err)
		}
	})

	t.Run("Holder_reportsNameFenceSinceAndExpiry", func(t *testing.T) {
		w := w(t)
		k := w.key(t, "r1")
		if _, err := w.b.Holder(ctxT(t), k); !errors.Is(err, locks.ErrNotHeld) {
			t.Fatalf("free key: %v", err)
		}
		before := time.Now().Add(-50 * time.Millisecond)
		l, err := w.a.Acquire(ctxT(t), k, 2*time.Second, locks.WithHolder("runtime-7"))
		if err != nil {
			t.Fatal(err)
		}
		info, err := w.b.Holder(ctxT(t), k)
		if err != nil {
			t.Fatal(err)
		}
		if info.Holder != "runtime-7" || info.Fence != l.Fence() || info.Since.Before(before) || info.Count != 1 {
			t.Fatalf("info = %+v", info)
		}
		if d := time.Until(info.ExpiresAt); d <= time.Second || d > 2*time.Second {
			t.Fatalf("expires in %v", d)
		}
		_ = l.Release(context.Background())
		if _, err := w.b.Holder(ctxT(t), k); !errors.Is(err, locks.ErrNotHeld) {
			t.Fatalf("after release: %v", err)
		}
	})

	t.Run("Expiry_letsTheNextHolderInWithHigherFence", func(t *testing.T) {
		w := w(t)
		k := w.key(t, "r1")
		l1, err := w.a.Acquire(ctxT(t), k, 100*time.Millisecond, locks.WithoutKeepalive())
		if err != nil {
			t.Fatal(err)
		}
		<-l1.Done() // the local deadline comes before the server's expiry
		if !errors.Is(l1.Err(), locks.ErrLeaseLost) {
			t.Fatalf("err after deadline = %v", l1.Err())
		}
		l2, err := w.b.Acquire(ctxT(t), k, time.Second, locks.WithWait(time.Second+tm.expiryGrace))
		if err != nil {
			t.Fatal(err)
		}
		defer l2.Release(context.Background())
		if l2.Fence() <= l1.Fence() {
			t.Fatalf("fence %d after %d", l2.Fence(), l1.Fence())
		}
		if err := l1.Release(context.Background()); !errors.Is(err, locks.ErrLeaseLost) {
			t.Fatalf("release of a lost lease = %v", err)
		}
		if info, _ := w.a.Holder(ctxT(t), k); info.Fence != l2.Fence() {
			t.Fatalf("late release touched the new holder: %+v", info)
		}
	})

	t.Run("Keepalive_holdsForTenTTLs", func(t *testing.T) {
		w := w(t)
		k := w.key(t, "r1")
		// long enough that a loaded CI machine's scheduling pauses (the
		// keepalive renews every ttl/3) do not pass for a keepalive bug
		ttl := 600 * time.Millisecond
		l, err := w.a.Acquire(ctxT(t), k, ttl)
		if err != nil {
			t.Fatal(err)
		}
		end := time.Now().Add(10 * ttl)
		for time.Now().Before(end) {
			if _, err := w.b.Acquire(ctxT(t), k, ttl); !errors.Is(err, locks.ErrHeld) {
				t.Fatalf("other acquire while held: %v", err)
			}
			time.Sleep(ttl / 3)
		}
		if l.Err() != nil {
			t.Fatalf("lease lost: %v", l.Err())
		}
		if n := w.counts.renews.Load(); n < 20 {
			t.Fatalf("renewals = %d, want about 30", n)
		}
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		n := w.counts.renews.Load()
		time.Sleep(ttl)
		if m := w.counts.renews.Load(); m != n {
			t.Fatalf("renewed %d times after release", m-n)
		}
	})

	t.Run("Keepalive_takenOver_cancelsContextAndFiresHook", func(t *testing.T) {
		lost := make(chan locks.Event, 1)
		w := newWorld(t, mk, locks.Options{Hooks: locks.Hooks{OnLost: func(e locks.Event) { lost <- e }}})
		k := w.key(t, "r1")
		ttl := 300 * time.Millisecond
		l, err := w.a.Acquire(ctxT(t), k, ttl)
		if err != nil {
			t.Fatal(err)
		}
		l2, err := w.b.Acquire(ctxT(t), k, 5*time.Second, locks.WithPreempt())
		if err != nil {
			t.Fatal(err)
		}
		defer l2.Release(context.Background())
		if l2.Fence() <= l.Fence() {
			t.Fatalf("preempt fence %d <= %d", l2.Fence(), l.Fence())
		}
		select {
		case <-l.Done():
		case <-time.After(ttl):
			t.Fatal("holder not told within one TTL")
		}
		if !errors.Is(context.Cause(l.Context()), locks.ErrLeaseLost) || !errors.Is(l.Err(), locks.ErrLeaseLost) {
			t.Fatalf("cause = %v, err = %v", context.Cause(l.Context()), l.Err())
		}
		if e := <-lost; e.Key != k || e.Fence != l.Fence() {
			t.Fatalf("hook event = %+v", e)
		}
		if info, _ := w.a.Holder(ctxT(t), k); info.Fence != l2.Fence() {
			t.Fatalf("the old holder touched the key: %+v", info)
		}
	})

	t.Run("Reentrancy_inProcess_countsHolds", func(t *testing.T) {
		w := w(t)
		k := w.key(t, "r1")
		l, err := w.a.Acquire(ctxT(t), k, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		calls := w.counts.acquires.Load()
		inner, err := w.a.Acquire(l.Context(), k, time.Second)
		if err != nil || inner != l || l.Count() != 2 {
			t.Fatalf("re-entry: %v same=%v count=%d", err, inner == l, l.Count())
		}
		if w.counts.acquires.Load() != calls {
			t.Fatal("re-entry ran the acquire script")
		}
		_ = inner.Release(context.Background())
		if _, err := w.b.Acquire(ctxT(t), k, time.Second); !errors.Is(err, locks.ErrHeld) {
			t.Fatalf("freed after one of two releases: %v", err)
		}
		_ = l.Release(context.Background())
		l2, err := w.b.Acquire(ctxT(t), k, time.Second)
		if err != nil {
			t.Fatalf("not freed after the last release: %v", err)
		}
		_ = l2.Release(context.Background())
	})

	t.Run("Reentrancy_unrelatedContext_isNotReentry", func(t *testing.T) {
		w := w(t)
		k := w.key(t, "r1")
		l, err := w.a.Acquire(ctxT(t), k, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release(context.Background())
		if _, err := w.a.Acquire(ctxT(t), k, time.Second); !errors.Is(err, locks.ErrHeld) {
			t.Fatalf("second goroutine of the same process got the lock: %v", err)
		}
	})

	t.Run("Reentrancy_byToken_sameFenceCountedInBackend", func(t *testing.T) {
		w := w(t)
		k := w.key(t, "r1")
		l, err := w.a.Acquire(ctxT(t), k, time.Second, locks.WithoutKeepalive())
		if err != nil {
			t.Fatal(err)
		}
		again, err := w.b.Acquire(ctxT(t), k, time.Second, locks.WithToken(l.Token()), locks.WithoutKeepalive())
		if err != nil || again.Fence() != l.Fence() {
			t.Fatalf("token re-entry: %v fence %d vs %d", err, again.Fence(), l.Fence())
		}
		if info, _ := w.b.Holder(ctxT(t), k); info.Count != 2 {
			t.Fatalf("count = %d", info.Count)
		}
		if _, err := w.b.Acquire(ctxT(t), k, time.Second, locks.WithToken("stale")); !errors.Is(err, locks.ErrLeaseLost) {
			t.Fatalf("stale token re-entry: %v", err)
		}
		if freed, err := w.b.Release(ctxT(t), k, l.Token()); err != nil || freed {
			t.Fatalf("first release: freed=%v %v", freed, err)
		}
		if freed, err := w.b.Release(ctxT(t), k, l.Token()); err != nil || !freed {
			t.Fatalf("second release: freed=%v %v", freed, err)
		}
	})

	t.Run("Wait_isWokenByRelease", func(t *testing.T) {
		// Fallback polling of an hour: only the release can explain a quick grant.
		w := newWorld(t, mk, locks.Options{BackoffBase: time.Hour, BackoffCap: time.Hour})
		k := w.key(t, "r1")
		l, err := w.b.Acquire(ctxT(t), k, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		go func() { time.Sleep(200 * time.Millisecond); _ = l.Release(context.Background()) }()
		start := time.Now()
		got, err := w.a.Acquire(ctxT(t), k, time.Second, locks.WithWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer got.Release(context.Background())
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("woken after %v", d)
		}
		if n := w.counts.acquires.Load(); n != 2 {
			t.Fatalf("%d acquire attempts, want 2 (one before, one after the release)", n)
		}
	})

	t.Run("Wait_deadline_endsWithHeld", func(t *testing.T) {
		w := w(t)
		k := w.key(t, "r1")
		l, err := w.b.Acquire(ctxT(t), k, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release(context.Background())
		start := time.Now()
		_, err = w.a.Acquire(ctxT(t), k, time.Second, locks.WithWait(300*time.Millisecond))
		d := time.Since(start)
		if !errors.Is(err, locks.ErrHeld) || d < 300*time.Millisecond || d > 3*time.Second {
			t.Fatalf("err=%v after %v", err, d)
		}
	})

	t.Run("AcquireAll_conflict_takesNothingAndNamesTheBlocker", func(t *testing.T) {
		w := w(t)
		ka, kb, kc := w.key(t, "a"), w.key(t, "b"), w.key(t, "c")
		l, err := w.b.Acquire(ctxT(t), kb, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release(context.Background())
		_, err = w.a.AcquireAll(ctxT(t), []string{kc, kb, ka}, time.Second)
		var held *locks.HeldError
		if !errors.As(err, &held) || held.Conflicts[0].Key != kb || held.Conflicts[0].Holder != "proc-b" {
			t.Fatalf("err = %v", err)
		}
		for _, k := range []string{ka, kc} {
			if _, err := w.b.Holder(ctxT(t), k); !errors.Is(err, locks.ErrNotHeld) {
				t.Fatalf("%s left held: %v", k, err)
			}
		}
	})

	t.Run("AcquireAll_grantsFencesAndReleasesAll", func(t *testing.T) {
		w := w(t)
		keys := []string{w.key(t, "x/2"), w.key(t, "x/1"), w.key(t, "x:3"), w.key(t, "x/1")}
		g, err := w.a.AcquireAll(ctxT(t), keys, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if f := g.Fences(); len(f) != 3 {
			t.Fatalf("fences = %v", f)
		}
		if inner, err := w.a.Acquire(g.Context(), keys[0], time.Second); err != nil || inner.Count() != 2 {
			t.Fatalf("re-entry under the group: %v", err)
		} else {
			_ = inner.Release(context.Background())
		}
		if err := g.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		<-g.Done()
		for _, k := range keys {
			if _, err := w.b.Holder(ctxT(t), k); !errors.Is(err, locks.ErrNotHeld) {
				t.Fatalf("%s still held: %v", k, err)
			}
		}
	})

	t.Run("AcquireAll_oppositeOrders_noDeadlockNeverBothInside", func(t *testing.T) {
		w := w(t)
		ka, kb := w.key(t, "a"), w.key(t, "b")
		const rounds = 1000
		var inside, maxInside, done atomic.Int64
		var wg sync.WaitGroup
		worker := func(m *locks.Manager, keys []string) {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				g, err := m.AcquireAll(ctxT(t), keys, 2*time.Second, locks.WithWait(10*time.Second))
				if err != nil {
					t.Errorf("round %d: %v", i, err)
					return
				}
				if n := inside.Add(1); n > maxInside.Load() {
					maxInside.Store(n)
				}
				inside.Add(-1)
				if err := g.Release(context.Background()); err != nil {
					t.Errorf("release: %v", err)
					return
				}
				done.Add(1)
			}
		}
		wg.Add(2)
		go worker(w.a, []string{ka, kb})
		go worker(w.b, []string{kb, ka})
		wg.Wait()
		if done.Load() != 2*rounds || maxInside.Load() != 1 {
			t.Fatalf("done=%d maxInside=%d", done.Load(), maxInside.Load())
		}
	})

	t.Run("Close_releasesOwnLeases", func(t *testing.T) {
		w := w(t)
		k := w.key(t, "job")
		if _, err := w.a.Acquire(ctxT(t), k, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := w.a.Close(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		l, err := w.b.Acquire(ctxT(t), k, time.Second)
		if err != nil {
			t.Fatalf("after Close: %v", err)
		}
		_ = l.Release(context.Background())
		if _, err := w.a.Acquire(ctxT(t), k, time.Second); !errors.Is(err, locks.ErrClosed) {
			t.Fatalf("acquire after Close: %v", err)
		}
	})

	runExclusiveSuite(t, mk)
}
