package e2e

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// Rollback under load: three instances serve resolve to several clients
// while a release runs at 50 %; after the rollback call returns, how long
// until no instance serves the candidate, and no request fails.
func TestE2E_rollbackUnderLoad_allInstancesLeaveTheCandidate(t *testing.T) {
	onEachBackend(t, 3, rollbackUnderLoad)
}

func rollbackUnderLoad(t *testing.T, c *cluster) {
	a := c.nodes[0].URL
	const cycles = 15
	seed(t, a, "shop", "prod", cycles+1)
	type sample struct {
		sent, got time.Time
		version   int
		status    int
		err       error
	}
	var staleness []time.Duration
	var total, failed int
	for cycle := 0; cycle < cycles; cycle++ {
		cand := cycle + 2
		var rel struct {
			ID string
		}
		must(t, 201, "POST", a+"/v1/agents/shop/envs/prod/releases", adminToken,
			map[string]any{"candidate_version": cand, "percent": 50, "stickiness": "user"}).json(t, &rel)
		stop := make(chan struct{})
		var mu sync.Mutex
		var samples []sample
		var wg sync.WaitGroup
		for w := 0; w < 6; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					node := c.nodes[(w+i)%len(c.nodes)]
					s := sample{sent: time.Now()}
					p, code, err := resolve(node.URL, "shop", "prod", fmt.Sprint("user-", rand.IntN(500)))
					s.got, s.version, s.status, s.err = time.Now(), p.Version, code, err
					mu.Lock()
					samples = append(samples, s)
					mu.Unlock()
				}
			}()
		}
		time.Sleep(300 * time.Millisecond)
		must(t, 200, "POST", a+"/v1/releases/"+rel.ID+"/rollback", adminToken, map[string]any{"reason": "bad candidate"})
		returned := time.Now()
		time.Sleep(500 * time.Millisecond)
		close(stop)
		wg.Wait()
		var stale time.Duration
		sawCandidate := false
		for _, s := range samples {
			total++
			if s.err != nil || s.status != 200 {
				failed++
				t.Errorf("cycle %d: failed request: %d %v", cycle, s.status, s.err)
				continue
			}
			if s.version == cand {
				sawCandidate = true
				if s.sent.After(returned) && s.got.Sub(returned) > stale {
					stale = s.got.Sub(returned)
				}
			}
		}
		if !sawCandidate {
			t.Fatalf("cycle %d: nobody was served the candidate at 50%%", cycle)
		}
		staleness = append(staleness, stale)
	}
	slices.Sort(staleness)
	t.Logf("%d rollbacks under load (3 instances, 6 clients): after the rollback returned, the candidate was served for p50 %v p99 %v max %v; %d requests, %d failed",
		cycles, pct(staleness, .5).Round(time.Microsecond), pct(staleness, .99).Round(time.Microsecond), staleness[len(staleness)-1].Round(time.Microsecond), total, failed)
	// The 200 ms p99 is a speed target, reported and not asserted (the
	// machine is shared). The guarantee is bounded staleness: no instance
	// serves the candidate longer than the 1 s reconciler period plus slack.
	t.Logf("p99 target < 200 ms: %s", metOrMissed(pct(staleness, .99) < 200*time.Millisecond))
	if max := staleness[len(staleness)-1]; max > 3*time.Second {
		t.Errorf("the candidate was served %v after the rollback returned (bound 3 s)", max)
	}
}
