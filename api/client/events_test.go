package client_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/promptd/promptd/api/client"
)

func waitStreaming(t *testing.T, pc *client.PromptCache) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !pc.Streaming(); {
		if time.Now().After(deadline) {
			t.Fatal("the cache's stream never came up")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// until polls pc.Get until it returns version want; it returns how long
// that took.
func until(t *testing.T, pc *client.PromptCache, agent, env string, want int, within time.Duration) time.Duration {
	t.Helper()
	ctx := ctxT(t)
	start := time.Now()
	for {
		p, err := pc.Get(ctx, agent, env, "u1", "")
		if err == nil && p.Version == want {
			return time.Since(start)
		}
		if time.Since(start) > within {
			t.Fatalf("after %v the cache still serves %+v (err %v), want version %d", within, p, err, want)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// TestPromptCache_follow_switchesReachTheCacheAtOnce: with the stream up
// and a MaxAge of an hour, every pointer switch and rollback reaches the
// cache within moments. The control cache, same MaxAge without Follow,
// still serves the first version: without events nothing would change.
func TestPromptCache_follow_switchesReachTheCacheAtOnce(t *testing.T) {
	s := startPromptd(t)
	ctx := ctxT(t)
	publish(t, s, "support", "prod", "v1")
	pc := s.rt.NewPromptCache(client.CacheMaxAge(time.Hour), client.CacheStreamMaxAge(time.Hour))
	control := s.rt.NewPromptCache(client.CacheMaxAge(time.Hour))
	fctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = pc.Follow(fctx) })
	defer func() { cancel(); wg.Wait() }()
	waitStreaming(t, pc)
	until(t, pc, "support", "prod", 1, time.Second)
	until(t, control, "support", "prod", 1, time.Second)

	rounds := 50
	if testing.Short() {
		rounds = 10
	}
	var lat []time.Duration
	for i := 2; i <= rounds+1; i++ {
		v := publish(t, s, "support", "prod", "v")
		lat = append(lat, until(t, pc, "support", "prod", v.Version, 5*time.Second))
	}
	// A rollback reaches it too.
	env, err := s.admin.GetEnv(ctx, "support", "prod")
	if err != nil {
		t.Fatal(err)
	}
	rb, err := s.admin.RollbackEnv(ctx, "support", "prod", client.RollbackEnvRequest{ExpectedRevision: env.Revision})
	if err != nil {
		t.Fatal(err)
	}
	lat = append(lat, until(t, pc, "support", "prod", rb.ToVersion, 5*time.Second))
	if p, _ := control.Get(ctx, "support", "prod", "u1", ""); p == nil || p.Version != 1 {
		t.Fatalf("control: without Follow the cache should still serve version 1, got %+v", p)
	}
	t.Logf("%d switches and a rollback reached the cache: p50 %v, p99 %v, max %v (MaxAge 1h)",
		rounds, percentile(lat, 0.5), percentile(lat, 0.99), percentile(lat, 1))
}

// TestPromptCache_follow_streamDown_fallsBackToPolling: when the stream
// cannot be opened, the cache revalidates every MaxAge as before.
func TestPromptCache_follow_streamDown_fallsBackToPolling(t *testing.T) {
	s := startPromptd(t)
	ctx := ctxT(t)
	s.trace.mu.Lock()
	s.trace.fail = func(r *http.Request) error {
		if strings.HasPrefix(r.URL.Path, "/v1/events") {
			return errors.New("stream cut")
		}
		return nil
	}
	s.trace.mu.Unlock()
	publish(t, s, "support", "prod", "v1")
	const maxAge = 300 * time.Millisecond
	pc := s.rt.NewPromptCache(client.CacheMaxAge(maxAge))
	fctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = pc.Follow(fctx) })
	defer func() { cancel(); wg.Wait() }()
	until(t, pc, "support", "prod", 1, time.Second)
	v := publish(t, s, "support", "prod", "v2")
	d := until(t, pc, "support", "prod", v.Version, 5*time.Second)
	if pc.Streaming() {
		t.Fatal("the stream is reported up though every attempt was cut")
	}
	t.Logf("stream cut: the switch reached the cache by polling after %v (MaxAge %v)", d.Round(time.Millisecond), maxAge)
}
