package locks_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/locks"
)

// logSink is a log buffer safe for concurrent writes.
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *logSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// observed is a Manager's options with a captured log (debug and up) and
// its own metrics registry.
func observed() (locks.Options, *logSink, *prometheus.Registry) {
	sink := &logSink{}
	reg := prometheus.NewRegistry()
	return locks.Options{
		Logger:  slog.New(slog.NewTextHandler(sink, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Metrics: locks.NewMetrics(reg),
	}, sink, reg
}

// counterSum adds up every series of the named counter.
func counterSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// Leases held by HTTP clients are granted without keepalive and renewed
// and released by token, possibly through another instance. The instance
// that granted one never hears of that, so it must not report the lease
// lost when its local deadline passes.
func TestLeasesHeldByToken_renewedOrReleased_areNotReportedLost(t *testing.T) {
	runBoth(t, func(t *testing.T, mk func(t *testing.T, prefix string) (locks.Backend, locks.Backend)) {
		oa, logsA, regA := observed()
		w := newWorld(t, mk, oa)
		const ttl = 300 * time.Millisecond
		ctx := ctxT(t)

		// A generic lease (as POST /v1/leases takes it), renewed then
		// released by token on the other instance.
		g1 := w.key(t, "order:1")
		tok := locks.NewToken()
		if _, err := w.a.AcquireAll(ctx, []string{g1}, ttl, locks.WithoutKeepalive(), locks.WithOwnerToken(tok)); err != nil {
			t.Fatal(err)
		}
		if _, err := w.b.Renew(ctx, g1, tok, ttl); err != nil {
			t.Fatal(err)
		}
		if _, err := w.b.Release(ctx, g1, tok); err != nil {
			t.Fatal(err)
		}
		// A session-style lease, re-entered by token, released on this instance.
		s1 := w.key(t, "session:1")
		l, err := w.a.Acquire(ctx, s1, ttl, locks.WithoutKeepalive(), locks.WithHolder("runtime-7"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.a.Acquire(ctx, s1, ttl, locks.WithoutKeepalive(), locks.WithToken(l.Token())); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			if _, err := w.a.Release(ctx, s1, l.Token()); err != nil {
				t.Fatal(err)
			}
		}
		// Renewed by token past the grant's local deadline, on the other instance.
		r1 := w.key(t, "order:2")
		tok2 := locks.NewToken()
		if _, err := w.a.AcquireAll(ctx, []string{r1}, ttl, locks.WithoutKeepalive(), locks.WithOwnerToken(tok2)); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 4; i++ {
			time.Sleep(ttl / 3)
			if _, err := w.b.Renew(ctx, r1, tok2, ttl); err != nil {
				t.Fatalf("renewal %d: %v", i, err)
			}
		}
		if _, err := w.b.Release(ctx, r1, tok2); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * ttl) // every local deadline has passed

		if strings.Contains(logsA.String(), "lease lost") {
			t.Errorf("a lease renewed or released by token was logged lost:\n%s", logsA)
		}
		if n := counterSum(t, regA, "promptd_lock_leases_lost_total"); n != 0 {
			t.Errorf("promptd_lock_leases_lost_total = %v after leases renewed or released by token", n)
		}

		// A renewal by a token that no longer holds its lease is the
		// client's news: counted as such, not as a lost lease.
		if _, err := w.a.Renew(ctx, r1, tok2, ttl); !errors.Is(err, locks.ErrLeaseLost) {
			t.Fatalf("renewal after release = %v", err)
		}
		if n := counterSum(t, regA, "promptd_lock_token_not_held_total"); n != 1 {
			t.Errorf("promptd_lock_token_not_held_total = %v, want 1", n)
		}

		// A lease of promptd's own (keepalive) released by token through the
		// Locker ends released, not lost.
		byToken := w.key(t, "job:0")
		kl, err := w.a.Acquire(ctx, byToken, ttl)
		if err != nil {
			t.Fatal(err)
		}
		if freed, err := w.a.Release(ctx, byToken, kl.Token()); err != nil || !freed {
			t.Fatalf("release by token = %v, %v", freed, err)
		}
		time.Sleep(2 * ttl) // past its next renewals and its deadline
		if !errors.Is(kl.Err(), locks.ErrReleased) || strings.Contains(logsA.String(), "lease lost") {
			t.Errorf("a keepalive lease released by token: Err %v; logs:\n%s", kl.Err(), logsA)
		}

		// A lease of promptd's own (keepalive) that is really lost is still reported.
		own := w.key(t, "job:1")
		jl, err := w.a.Acquire(ctx, own, ttl)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.b.Acquire(ctx, own, time.Minute, locks.WithPreempt()); err != nil {
			t.Fatal(err)
		}
		select {
		case <-jl.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the taken-over lease was not ended")
		}
		// The context ends first; the log line and count follow at once.
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end) && !strings.Contains(logsA.String(), "lease lost"); {
			time.Sleep(10 * time.Millisecond)
		}
		if !strings.Contains(logsA.String(), "lease lost") {
			t.Errorf("a real loss of a promptd lease was not logged:\n%s", logsA)
		}
		if n := counterSum(t, regA, "promptd_lock_leases_lost_total"); n != 1 {
			t.Errorf("promptd_lock_leases_lost_total = %v after one real loss, want 1", n)
		}
	})
}

// runBoth runs f over the memory backend and, when a test Redis is
// available, the Redis backend.
func runBoth(t *testing.T, f func(t *testing.T, mk func(t *testing.T, prefix string) (locks.Backend, locks.Backend))) {
	t.Run("memory", func(t *testing.T) {
		f(t, func(t *testing.T, prefix string) (locks.Backend, locks.Backend) {
			b := locks.NewMemoryBackend(nil)
			return b, b
		})
	})
	t.Run("redis", func(t *testing.T) {
		url := testenv.RedisURL(t)
		f(t, func(t *testing.T, prefix string) (locks.Backend, locks.Backend) {
			return redisBackend(t, url, prefix), redisBackend(t, url, prefix)
		})
	})
}
