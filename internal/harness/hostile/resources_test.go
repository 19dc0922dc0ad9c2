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

// One token acquiring generic leases without end used to grow Redis
// (fence keys kept 24 h) and the audit log (a payload copy per row) with
// no per-client bound. Now a token holds at most PROMPTD_LEASE_MAX_PER_TOKEN
// live leases (429 quota_exceeded with Retry-After past it), the other
// tokens keep theirs, a released lease frees its place, and lease audit
// rows carry no payload.
func TestHostile_resources_leaseFloodOfOneTokenIsCapped(t *testing.T) {
	const limit = 10
	eachStore(t, map[string]string{"PROMPTD_LEASE_MAX_PER_TOKEN": fmt.Sprint(limit)}, func(t *testing.T, s *Server) {
		other := s.Must(t, http.StatusCreated, "POST", "/v1/tokens", AdminToken,
			map[string]any{"name": "other-runtime", "role": "runtime"}).JSON["secret"].(string)
		acquire := func(token string, i int) *Resp {
			return s.Do(t, "POST", "/v1/leases", token, map[string]any{
				"resources": []string{fmt.Sprintf("flood/%s/%d", token[:6], i)}, "holder": "flooder", "ttl_ms": 60000})
		}
		var first *Resp
		granted := 0
		for i := range 3 * limit {
			r := acquire(RuntimeToken, i)
			switch r.Status {
			case http.StatusCreated, http.StatusOK:
				granted++
				if first == nil {
					first = r
				}
			case http.StatusTooManyRequests:
				Refused(t, r, http.StatusTooManyRequests, "quota_exceeded")
				if r.Header.Get("Retry-After") == "" {
					t.Fatalf("429 without Retry-After: %s", r.Body)
				}
			default:
				t.Fatalf("lease %d = %d %s", i, r.Status, r.Body)
			}
		}
		if granted != limit {
			t.Fatalf("one token was granted %d live leases; want the cap, %d", granted, limit)
		}
		if r := acquire(other, 0); r.Status/100 != 2 {
			t.Fatalf("another token's lease after the flood = %d %s", r.Status, r.Body)
		}
		s.Must(t, http.StatusNoContent, "DELETE", "/v1/leases/"+first.JSON["lease_id"].(string), RuntimeToken, nil,
			"Lease-Token", first.JSON["token"].(string))
		if r := acquire(RuntimeToken, 1000); r.Status/100 != 2 {
			t.Fatalf("a lease after one was released = %d %s", r.Status, r.Body)
		}
		// The feed's lease events (written in batches) stay small: no copy
		// of a payload.
		var feed *Resp
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			feed = s.Must(t, http.StatusOK, "GET", "/v1/events?since=0&limit=500", AdminToken, nil)
			if strings.Count(string(feed.Body), `"lease.acquired"`) >= limit || time.Now().After(deadline) {
				break
			}
		}
		if n := strings.Count(string(feed.Body), `"lease.acquired"`); n < limit {
			t.Fatalf("%d lease.acquired events in the feed, want at least %d: %.300s", n, limit, feed.Body)
		}
		if per := len(feed.Body) / (limit + 2); per > 4096 {
			t.Fatalf("the feed page holds %d bytes for %d lease events: over 4 KiB an event", len(feed.Body), limit+2)
		}
	})
}

// Forty conditional bundle requests at once used to build forty whole
// bodies (the 304s included); a record list of large payloads was built
// whole however large. Now every matching request is a bodiless 304, and
// a record page ends once its payloads pass 4 MiB (the next page follows
// its cursor), so no answer holds every record.
func TestHostile_resources_concurrentConditionalBundles_andLargeRecordPages(t *testing.T) {
	eachStore(t, nil, func(t *testing.T, s *Server) {
		s.Publish(t, "support", 0, strings.Repeat("y", 200_000))
		s.Must(t, http.StatusCreated, "PUT", "/v1/agents/support/envs/prod", AdminToken, map[string]any{"version": 1, "expected_revision": 0})
		var etag string
		for range 50 { // until the writes above are stamped and the ETag stays
			etag = s.Must(t, http.StatusOK, "GET", "/v1/bundle", RuntimeToken, nil).Header.Get("ETag")
			if r := s.Do(t, "GET", "/v1/bundle", RuntimeToken, nil, "If-None-Match", etag); r.Status == http.StatusNotModified {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		answers := map[int]int{}
		bodies := 0
		for range 40 {
			wg.Go(func() {
				r := s.Do(t, "GET", "/v1/bundle", RuntimeToken, nil, "If-None-Match", etag)
				mu.Lock()
				answers[r.Status]++
				bodies += len(r.Body)
				mu.Unlock()
			})
		}
		wg.Wait()
		if answers[http.StatusNotModified] != 40 || bodies != 0 {
			t.Fatalf("40 conditional bundles at once answered %v with %d body bytes; want 40 bodiless 304s", answers, bodies)
		}

		payload := strings.Repeat("z", 250_000)
		const records = 40 // 10 MB of payloads
		for i := range records {
			s.Must(t, http.StatusCreated, "POST", "/v1/boards/big/records", RuntimeToken, map[string]any{"id": fmt.Sprintf("r%02d", i), "payload": payload})
		}
		seen, pages, largest := 0, 0, 0
		for cursor := ""; ; pages++ {
			path := "/v1/boards/big/records?limit=500"
			if cursor != "" {
				path += "&cursor=" + cursor
			}
			r := s.Must(t, http.StatusOK, "GET", path, RuntimeToken, nil)
			largest = max(largest, len(r.Body))
			seen += len(r.JSON["items"].([]any))
			next, _ := r.JSON["next"].(string)
			if next == "" {
				break
			}
			cursor = next
		}
		t.Logf("%s: %d records of 250 kB in %d pages, the largest %d bytes", s.Store, seen, pages+1, largest)
		if seen != records || largest > 4<<20+300_000 {
			t.Fatalf("%d records in %d pages, the largest %d bytes; want all %d, no page past 4 MiB and one record", seen, pages+1, largest, records)
		}
	})
}
