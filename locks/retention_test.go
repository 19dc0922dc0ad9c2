package locks_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/locks"
)

// genericLeaseCycles takes and frees n generic leases on distinct
// resources the way the HTTP layer does (AcquireAll without keepalive,
// one owner token, release by token), from a few goroutines.
func genericLeaseCycles(t *testing.T, m *locks.Manager, keys locks.Keys, prefix string, n int) {
	t.Helper()
	const workers = 8
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				k, err := keys.Key("lease", prefix+strconv.FormatInt(i, 10))
				if err != nil {
					errs <- err
					return
				}
				token := locks.NewToken()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err = m.AcquireAll(ctx, []string{k}, 30*time.Second, locks.WithoutKeepalive(), locks.WithOwnerToken(token))
				if err == nil {
					_, err = m.Release(ctx, k, token)
				}
				cancel()
				if err != nil {
					errs <- fmt.Errorf("lease %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// keyTTLs scans every key of the server and counts them, and those with
// no TTL (TTL -1).
func keyTTLs(t *testing.T, c *redis.Client) (keys, noTTL int, example string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	iter := c.Scan(ctx, 0, "*", 1000).Iterator()
	var batch []string
	flush := func() {
		pipe := c.Pipeline()
		cmds := make([]*redis.DurationCmd, len(batch))
		for i, k := range batch {
			cmds[i] = pipe.PTTL(ctx, k)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		for i, cmd := range cmds {
			// go-redis reports PTTL -1 (no expiry) as the duration -1.
			if cmd.Val() == -1 {
				noTTL++
				example = batch[i]
			}
		}
		keys += len(batch)
		batch = batch[:0]
	}
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 1000 {
			flush()
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	flush()
	return keys, noTTL, example
}

// usedMemory is the server's used_memory (INFO memory).
func usedMemory(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	info, err := c.InfoMap(ctxT(t), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.ParseInt(info["Memory"]["used_memory"], 10, 64)
	return n
}

// leaseCount is how many generic leases TestRedisKeys_afterManyGenericLeases
// takes: PROMPTD_LOCKS_RETENTION_LEASES, default 10,000.
func leaseCount(t *testing.T) int {
	if v := os.Getenv("PROMPTD_LOCKS_RETENTION_LEASES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("PROMPTD_LOCKS_RETENTION_LEASES=%q", v)
		}
		return n
	}
	return 10000
}

func TestRedisKeys_afterManyGenericLeases_allHaveTTL_andFencesKeepGrowing(t *testing.T) {
	srv := testenv.StartRedis(t) // a server of its own: every key it holds is the test's
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true,
		ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	t.Cleanup(func() { _ = c.Close() })
	keys := locks.Keys{Prefix: "ret"}
	m := locks.NewRedis(c, locks.RedisOptions{Keys: keys, Timeout: time.Second}, locks.Options{Holder: "t"})
	t.Cleanup(func() { _ = m.Close(context.Background()) })

	n := leaseCount(t)
	memBefore := usedMemory(t, c)
	start := time.Now()
	genericLeaseCycles(t, m, keys, "order:", n)
	took := time.Since(start)
	total, noTTL, example := keyTTLs(t, c)
	perKey := float64(usedMemory(t, c)-memBefore) / float64(max(total, 1))
	t.Logf("%d generic leases on distinct resources in %v: %d Redis keys, %d without a TTL (about %.0f bytes of Redis memory per key)",
		n, took.Round(time.Millisecond), total, noTTL, perKey)
	if noTTL != 0 {
		t.Fatalf("%d of %d keys have no TTL, e.g. %q", noTTL, total, example)
	}

	// A fence key lives well beyond the lease it guards: DefaultFenceTTL
	// (the time component of the fence carries it on after that).
	k, _ := keys.Key("lease", "order:0")
	if ttl := c.PTTL(ctxT(t), locks.FenceKey(k)).Val(); ttl < locks.DefaultFenceTTL-time.Minute {
		t.Errorf("fence key TTL %v, want about %v", ttl, locks.DefaultFenceTTL)
	}

	// Locked again after its fence key expired (deleted here), a resource
	// gets a higher fence than before.
	first, err := m.Acquire(ctxT(t), k, time.Second, locks.WithoutKeepalive())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Release(ctxT(t), k, first.Token()); err != nil {
		t.Fatal(err)
	}
	if n := c.Del(ctxT(t), locks.FenceKey(k)).Val(); n != 1 {
		t.Fatalf("fence key not there to delete (%d)", n)
	}
	again, err := m.Acquire(ctxT(t), k, time.Second, locks.WithoutKeepalive())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fence before the fence key was deleted: %d, after: %d (+%d)", first.Fence(), again.Fence(), again.Fence()-first.Fence())
	if again.Fence() <= first.Fence() {
		t.Fatalf("fence %d after %d: not strictly increasing across the loss of the fence key", again.Fence(), first.Fence())
	}
	_, _ = m.Release(ctxT(t), k, again.Token())

	// The same for a fence pushed ahead of the clock by a storage floor:
	// while its key lives, the next grant is above it.
	ahead := time.Now().Add(time.Hour).UnixMicro()
	k2, _ := keys.Key("lease", "order:1")
	l1, err := m.Acquire(ctxT(t), k2, time.Second, locks.WithoutKeepalive(), locks.WithMinFence(ahead))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = m.Release(ctxT(t), k2, l1.Token())
	l2, err := m.Acquire(ctxT(t), k2, time.Second, locks.WithoutKeepalive())
	if err != nil {
		t.Fatal(err)
	}
	if l2.Fence() <= l1.Fence() {
		t.Fatalf("fence %d after %d (a floor ahead of the clock)", l2.Fence(), l1.Fence())
	}
	_, _ = m.Release(ctxT(t), k2, l2.Token())
}
