package locks_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/locks"
)

// quickClient gives up within the per-call bound, as promptd's own does.
func quickClient(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true,
		DialTimeout: 100 * time.Millisecond, ReadTimeout: 100 * time.Millisecond, WriteTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestRedisFence_afterKill9RestartAndFlushall_keepsGrowing(t *testing.T) {
	srv := testenv.StartRedis(t)
	c := quickClient(t, srv.Addr())
	m := locks.NewRedis(c, locks.RedisOptions{Timeout: 100 * time.Millisecond}, locks.Options{Holder: "t"})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	keys := locks.Keys{}
	k, _ := keys.Key("session", "s-1")
	var highest int64
	cycle := func(n int) {
		for i := 0; i < n; i++ {
			l, err := m.Acquire(ctxT(t), k, time.Second, locks.WithoutKeepalive())
			if err != nil {
				t.Fatal(err)
			}
			if l.Fence() <= highest {
				t.Fatalf("fence %d after %d", l.Fence(), highest)
			}
			highest = l.Fence()
			_ = l.Release(context.Background())
		}
	}
	cycle(500)
	beforeKill := highest
	srv.Kill()
	srv.Restart()
	if n, err := c.DBSize(ctxT(t)).Result(); err != nil || n != 0 {
		t.Fatalf("restarted server not empty: %d %v", n, err)
	}
	cycle(1)
	afterKill := highest
	cycle(100)
	if err := c.FlushAll(ctxT(t)).Err(); err != nil {
		t.Fatal(err)
	}
	beforeFlush := highest
	cycle(1)
	t.Logf("fence before kill -9: %d, first after restart: %d (+%d); before FLUSHALL: %d, first after: %d (+%d)",
		beforeKill, afterKill, afterKill-beforeKill, beforeFlush, highest, highest-beforeFlush)
}

func TestKeepalive_redisStopped_holderToldBeforeTTL(t *testing.T) {
	srv := testenv.StartRedis(t)
	c := quickClient(t, srv.Addr())
	counts := &countingBackend{Backend: locks.NewRedisBackend(c, locks.RedisOptions{Timeout: 50 * time.Millisecond})}
	m := locks.New(counts, locks.Options{Holder: "t"})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	k, _ := locks.Keys{}.Job("sweeper")
	const ttl = 600 * time.Millisecond
	sent := time.Now()
	l, err := m.Acquire(ctxT(t), k, ttl)
	if err != nil {
		t.Fatal(err)
	}
	var afterLoss atomic.Int64
	counts.mu.Lock()
	counts.onRenew = func(string) {
		if l.Err() != nil {
			afterLoss.Add(1)
		}
	}
	counts.mu.Unlock()

	time.Sleep(10 * ttl) // held for 10 TTLs on keepalive
	if l.Err() != nil {
		t.Fatalf("lost while Redis was up: %v", l.Err())
	}
	srv.Pause()
	defer srv.Resume()
	select {
	case <-l.Done():
	case <-time.After(3 * ttl):
		t.Fatal("holder not told within 3 TTLs of Redis stopping")
	}
	lostAt := time.Now()
	last := counts.lastRenewSent()
	if last.IsZero() {
		last = sent
	}
	margin := last.Add(ttl).Sub(lostAt)
	if margin <= 0 {
		t.Fatalf("told %v after the TTL since the last successful renewal was sent", -margin)
	}
	time.Sleep(2 * ttl)
	if n := afterLoss.Load(); n != 0 {
		t.Fatalf("%d renewals sent after the loss", n)
	}
	t.Logf("ttl %v: holder told %v before last successful renewal send + TTL; renewals after loss: %d; renewals in all: %d",
		ttl, margin.Round(time.Millisecond), afterLoss.Load(), counts.renews.Load())
}

// lossyScripter runs the first acquire for real and then reports a
// timeout, as a reply lost on the wire would look to go-redis.
type lossyScripter struct {
	*redis.Client
	once  sync.Once
	calls atomic.Int64
}

func (s *lossyScripter) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	cmd := s.Client.EvalSha(ctx, sha, keys, args...)
	return s.lose(ctx, cmd)
}

func (s *lossyScripter) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	cmd := s.Client.Eval(ctx, script, keys, args...)
	return s.lose(ctx, cmd)
}

func (s *lossyScripter) lose(ctx context.Context, cmd *redis.Cmd) *redis.Cmd {
	if cmd.Err() != nil {
		return cmd // NOSCRIPT: the script runs via EVAL next
	}
	s.calls.Add(1)
	lost := false
	s.once.Do(func() { lost = true })
	if !lost {
		return cmd
	}
	out := redis.NewCmd(ctx)
	out.SetErr(context.DeadlineExceeded)
	return out
}

func TestRedisAcquire_lostReply_retryYieldsOneGrantOneFence(t *testing.T) {
	c := testenv.RedisClient(t)
	ls := &lossyScripter{Client: c}
	prefix := "lossy" + time.Now().Format("150405.000000")
	b := locks.NewRedisBackend(ls, locks.RedisOptions{Keys: locks.Keys{Prefix: prefix}})
	k, _ := locks.Keys{Prefix: prefix}.Key("lease", "order-1")
	req := locks.Request{Token: "tok-1", Holder: "h", TTL: time.Second}
	g, err := b.Acquire(ctxT(t), k, req)
	if err != nil {
		t.Fatalf("acquire with a lost reply: %v", err)
	}
	if ls.calls.Load() != 2 {
		t.Fatalf("script ran %d times, want 2 (the lost one and the retry)", ls.calls.Load())
	}
	counter, err := c.Get(ctxT(t), locks.FenceKey(k)).Int64()
	if err != nil || counter != g.Fence {
		t.Fatalf("fence counter %d, granted %d: a second fence was issued", counter, g.Fence)
	}
	// go-redis itself retries after a read timeout: the same token gets the same grant.
	again, err := b.Acquire(ctxT(t), k, req)
	if err != nil || again.Fence != g.Fence || again.Count != 1 {
		t.Fatalf("repeat: %+v %v", again, err)
	}
	if _, err := b.Acquire(ctxT(t), k, locks.Request{Token: "tok-2", Holder: "h", TTL: time.Second}); !errors.Is(err, locks.ErrHeld) {
		t.Fatalf("another token: %v", err)
	}
}

func quickURLClient(t *testing.T, url string) *redis.Client {
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	return quickClient(t, opt.Addr)
}

func newRedisClient(url string) (*redis.Client, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, err
	}
	return redis.NewClient(opt), nil
}

func errorsIsStale(err error) bool { return errors.Is(err, locks.ErrStaleFence) }
