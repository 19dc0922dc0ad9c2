package hostile

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// One token flooding heavy requests (bundles of large configs) used to
// hold embedded mode's single SQL connection: every other client waited,
// then 503. Now the flooder builds at most its per-token cap of bundles at
// once (429 past it; the same content is sent from the body kept by its
// ETag), and another token's reads keep answering (on SQLite from the
// read pool).
func TestHostile_resources_heavyFloodOfOneTokenLeavesOthersServed(t *testing.T) {
	eachStore(t, map[string]string{"PROMPTD_HEAVY_PER_TOKEN": "2"}, func(t *testing.T, s *Server) {
		big := strings.Repeat("x", 400_000)
		for i := range 4 {
			agent := fmt.Sprintf("big%d", i)
			s.Publish(t, agent, 0, big)
			s.Must(t, http.StatusCreated, "PUT", "/v1/agents/"+agent+"/envs/prod", AdminToken, map[string]any{"version": 1, "expected_revision": 0})
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		statuses := map[int]int{}
		for range 8 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					r := s.Do(t, "GET", "/v1/bundle", RuntimeToken, nil)
					mu.Lock()
					statuses[r.Status]++
					mu.Unlock()
				}
			})
		}
		var lat []time.Duration
		for range 20 {
			start := time.Now()
			s.Must(t, http.StatusOK, "GET", "/v1/agents/big0/envs/prod", AdminToken, nil)
			lat = append(lat, time.Since(start))
			time.Sleep(20 * time.Millisecond)
		}
		close(stop)
		wg.Wait()
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		t.Logf("%s: flood answers %v; the other token's read p50 %s, max %s", s.Store, statuses, lat[len(lat)/2], lat[len(lat)-1])
		if statuses[http.StatusOK] == 0 {
			t.Fatalf("flood answers %v; want bundles served (built within the cap, or the kept body)", statuses)
		}
		for code := range statuses {
			if code != http.StatusOK && code != http.StatusTooManyRequests {
				t.Fatalf("flood answers %v; only 200 and 429 expected", statuses)
			}
		}
	})
}

// Conditional bundle requests that match answer 304 without the body;
// an import cannot store a config over 1 MiB.
func TestHostile_resources_conditionalBundleAndOversizedImport(t *testing.T) {
	eachStore(t, nil, func(t *testing.T, s *Server) {
		s.Publish(t, "support", 0, "hello")
		s.Must(t, http.StatusCreated, "PUT", "/v1/agents/support/envs/prod", AdminToken, map[string]any{"version": 1, "expected_revision": 0})
		// The ETag names the content with the feed position it reflects:
		// once the writes above are stamped it stays, and matches.
		var r *Resp
		for range 50 {
			etag := s.Must(t, http.StatusOK, "GET", "/v1/bundle", RuntimeToken, nil).Header.Get("ETag")
			if r = s.Do(t, "GET", "/v1/bundle", RuntimeToken, nil, "If-None-Match", etag); r.Status != http.StatusOK {
				break
			}
			time.Sleep(100 * time.Millisecond) // the feed moved in between
		}
		if r.Status != http.StatusNotModified || len(r.Body) != 0 {
			t.Fatalf("If-None-Match = %d (%d bytes)", r.Status, len(r.Body))
		}
		huge := map[string]any{"mode": "all_or_nothing", "items": []any{map[string]any{"agent": "huge", "base_version": 0,
			"config": map[string]any{"system": strings.Repeat("x", 3<<20)}}}}
		r = s.Do(t, "POST", "/v1/import", AdminToken, huge)
		if r.Status/100 == 2 && !strings.Contains(string(r.Body), "invalid") || r.Status/100 == 5 {
			t.Fatalf("import of a 3 MiB config = %d %.300s", r.Status, r.Body)
		}
		Refused(t, s.Do(t, "GET", "/v1/agents/huge/versions", AdminToken, nil), http.StatusNotFound, "agent_not_found")
	})
}
