package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// publish creates one version with retries: on 409 version_conflict it
// takes latest_version as the new base. It returns the acknowledged
// version and how long the whole publication took.
func publish(t *testing.T, base, agent, text string) (int, time.Duration) {
	start := time.Now()
	b := 0
	for attempt := 0; attempt < 500; attempt++ {
		r, err := call("POST", base+"/v1/agents/"+agent+"/versions", adminToken,
			map[string]any{"base_version": b, "config": map[string]any{"system": text}})
		if err != nil {
			t.Errorf("%s: %v", text, err)
			return 0, 0
		}
		switch r.Status {
		case 201:
			var v struct{ Version int }
			_ = json.Unmarshal(r.Body, &v)
			return v.Version, time.Since(start)
		case 409:
			var p struct {
				Code          string
				LatestVersion int `json:"latest_version"`
			}
			_ = json.Unmarshal(r.Body, &p)
			if p.Code != "version_conflict" {
				t.Errorf("%s: %s", text, r.Body)
				return 0, 0
			}
			b = p.LatestVersion
		default:
			t.Errorf("%s: %d %s", text, r.Status, r.Body)
			return 0, 0
		}
	}
	t.Errorf("%s: gave up", text)
	return 0, 0
}

// runPublishers starts n publishers over the cluster's nodes; agentOf
// names each one's agent. It checks that every acknowledged config is
// stored exactly once, at the version acknowledged.
func runPublishers(t *testing.T, c *cluster, n int, agentOf func(i int) string) []time.Duration {
	var mu sync.Mutex
	acked := map[string]int{}
	var lat []time.Duration
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			text := fmt.Sprintf("publisher %d", i)
			v, d := publish(t, c.nodes[i%len(c.nodes)].URL, agentOf(i), text)
			mu.Lock()
			acked[agentOf(i)+"/"+text] = v
			lat = append(lat, d)
			mu.Unlock()
		}()
	}
	wg.Wait()
	agents := map[string]bool{}
	for i := 0; i < n; i++ {
		agents[agentOf(i)] = true
	}
	stored := 0
	for agent := range agents {
		var page struct {
			Items []struct {
				Version int
				Config  struct{ System string }
			}
		}
		must(t, 200, "GET", c.nodes[0].URL+"/v1/agents/"+agent+"/versions?limit=500", runtimeToken, nil).json(t, &page)
		seen := map[string]bool{}
		for _, v := range page.Items {
			key := agent + "/" + v.Config.System
			if seen[key] || acked[key] != v.Version {
				t.Fatalf("%s v%d %q: duplicate %v, acknowledged as v%d", agent, v.Version, v.Config.System, seen[key], acked[key])
			}
			seen[key] = true
			stored++
		}
	}
	if stored != n || len(acked) != n {
		t.Fatalf("%d versions stored, %d acknowledged, %d publishers", stored, len(acked), n)
	}
	slices.Sort(lat)
	return lat
}

// 30 publishers race on one agent through three instances, each retrying
// on 409 with a fresh base: nothing acknowledged is lost or duplicated;
// the same with redis-server stopped (SQL conditions alone; single server
// only); and 30 publishers on 30 agents are not serialised by one lock.
func TestE2E_publishers_noLostUpdate(t *testing.T) {
	onEachBackend(t, 3, publishersNoLostUpdate)
}

func publishersNoLostUpdate(t *testing.T, c *cluster) {
	one := runPublishers(t, c, 30, func(int) string { return "shared" })
	many := runPublishers(t, c, 30, func(i int) string { return fmt.Sprint("own-", i) })
	t.Logf("30 publishers, one agent: 30 versions, each acknowledged config once; publish latency p50 %v p99 %v",
		pct(one, .5).Round(time.Millisecond), pct(one, .99).Round(time.Millisecond))
	t.Logf("30 publishers, 30 agents: p50 %v p99 %v (not serialised by one lock)",
		pct(many, .5).Round(time.Millisecond), pct(many, .99).Round(time.Millisecond))

	if c.redis == nil {
		return // a Redis Cluster is not stopped here
	}
	c.redis.Pause()
	defer c.redis.Resume()
	var ready struct{ SQL, Redis, Mode string }
	r := must(t, 200, "GET", c.nodes[1].URL+"/readyz", "", nil)
	r.json(t, &ready)
	if ready.Redis != "down" || ready.Mode != "degraded" {
		t.Fatalf("/readyz with Redis stopped: %s", r.Body)
	}
	down := runPublishers(t, c, 30, func(int) string { return "shared-no-redis" })
	t.Logf("Redis stopped (/readyz %s): 30 publishers on one agent, all acknowledged configs stored once; p50 %v p99 %v",
		bytes.TrimSpace(r.Body), pct(down, .5).Round(time.Millisecond), pct(down, .99).Round(time.Millisecond))
}
