package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// Three promptd processes on one Redis (a server, then a Redis Cluster)
// and MariaDB: a pointer switch through one is served by the others
// (pub/sub); with pub/sub cut by a Redis restart (single server), the
// reconciler brings every instance over within its period.
func TestE2E_threeInstances_switchPropagates(t *testing.T) {
	onEachBackend(t, 3, switchPropagates)
}

func switchPropagates(t *testing.T, c *cluster) {
	a := c.nodes[0].URL
	seed(t, a, "support", "prod", 3)
	for _, n := range c.nodes {
		if p, code, err := resolve(n.URL, "support", "prod", ""); err != nil || code != 200 || p.Version != 1 {
			t.Fatalf("%s: %d %v %+v", n.URL, code, err, p)
		}
	}
	rev := 1
	switchTo := func(v int) {
		t.Helper()
		var env struct{ Revision int }
		must(t, 200, "PUT", a+"/v1/agents/support/envs/prod", adminToken, map[string]any{"version": v, "expected_revision": rev}).json(t, &env)
		rev = env.Revision
	}
	// waitServed polls the other instances until they serve version v.
	waitServed := func(v int, limit time.Duration) time.Duration {
		start := time.Now()
		for _, n := range c.nodes[1:] {
			for {
				p, code, err := resolve(n.URL, "support", "prod", "")
				if err == nil && code == 200 && p.Version == v {
					break
				}
				if time.Since(start) > limit {
					t.Fatalf("%s still serves %d (%d %v) %v after the switch to %d", n.URL, p.Version, code, err, limit, v)
				}
				time.Sleep(200 * time.Microsecond)
			}
		}
		return time.Since(start)
	}
	var lat []time.Duration
	for i := 0; i < 100; i++ {
		v := 2 + i%2 // 2, 3, 2, 3, ...
		switchTo(v)
		lat = append(lat, waitServed(v, 3*time.Second))
	}
	slices.Sort(lat)
	t.Logf("propagation over HTTP to 2 other instances after the switch returned, %d switches: p50 %v p99 %v max %v",
		len(lat), pct(lat, .5).Round(time.Microsecond), pct(lat, .99).Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond))
	// The 100 ms p99 is a speed target, reported here and not asserted
	// (the machine is shared); waitServed fails the test beyond 3 s, the
	// staleness bound (1 s reconciler plus slack) that is a guarantee.
	t.Logf("p99 target < 100 ms: %s", metOrMissed(pct(lat, .99) < 100*time.Millisecond))

	if c.redisCluster != nil {
		// The pointer mirror and the snapshots are in the cluster, on the
		// master the hash tag {support} picks. The mirror is written best
		// effort, so a timed-out write may leave it a few switches behind.
		ctx := context.Background()
		if got, err := c.redisCluster.HGet(ctx, "prompt:ptr:{support}:prod", "rev").Int(); err != nil || got <= 1 || got > rev {
			t.Errorf("pointer mirror revision %d (%v), want 2..%d", got, err, rev)
		}
		for v := 1; v <= 3; v++ {
			if n, err := c.redisCluster.Exists(ctx, fmt.Sprint("prompt:snap:{support}:", v)).Result(); err != nil || n != 1 {
				t.Errorf("snapshot %d mirrored: %d %v", v, n, err)
			}
		}
	}
	if c.redis == nil {
		return // a Redis Cluster is not killed here
	}
	// Cut pub/sub: Redis dies; the switch goes through on SQL; the events are lost.
	c.redis.Kill()
	switchTo(1)
	d := waitServed(1, 5*time.Second)
	t.Logf("Redis down: the switch was served by every instance after %v (reconciler every 1s)", d.Round(time.Millisecond))
	c.redis.Restart()
	switchTo(3)
	d = waitServed(3, 5*time.Second)
	t.Logf("Redis restarted empty: the next switch was served everywhere after %v", d.Round(time.Millisecond))
}
