package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// rssKiB is the resident set of process pid, from /proc.
func rssKiB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return -1
}

// TestE2E_feed_propagation measures how long a pointer switch made on one
// instance takes to reach SSE subscribers on another: one subscriber over
// many switches, then 1,000 subscribers at once on one instance (with its
// RSS). Figures are logged, not asserted (a shared machine); every
// subscriber must receive every switch, within 5 s.
// PROMPTD_FEED_SWITCHES sets the number of switches (default 200; the
// figures of docs/change-feed.md use 1000).
func TestE2E_feed_propagation(t *testing.T) {
	switches := 200
	if v, err := strconv.Atoi(os.Getenv("PROMPTD_FEED_SWITCHES")); err == nil && v > 0 {
		switches = v
	}
	c := startCluster(t, 3, map[string]string{"PROMPTD_STREAMS_PER_TOKEN": "2000"})
	writer, reader := c.nodes[0].URL, c.nodes[1].URL
	seed(t, writer, "support", "prod", 2)
	rev := 1
	switchTo := func(v int) time.Time {
		t.Helper()
		start := time.Now()
		var env struct{ Revision int }
		must(t, 200, "PUT", writer+"/v1/agents/support/envs/prod", adminToken, map[string]any{"version": v, "expected_revision": rev}).json(t, &env)
		rev = env.Revision
		return start
	}

	// subscribe opens n streams of pointer.switched on reader; got[i]
	// receives subscriber i's event arrival times by revision.
	type arrivals struct {
		mu sync.Mutex
		at map[int]time.Time
	}
	subscribe := func(ctx context.Context, n int) []*arrivals {
		out := make([]*arrivals, n)
		var ready sync.WaitGroup
		for i := range out {
			out[i] = &arrivals{at: map[int]time.Time{}}
			ready.Add(1)
			go func() {
				first := true
				_ = sseReadEvents(ctx, reader+"/v1/events?actions=pointer.switched", func() {
					if first {
						first = false
						ready.Done()
					}
				}, func(revision int) {
					a := out[i]
					a.mu.Lock()
					a.at[revision] = time.Now()
					a.mu.Unlock()
				})
				if first {
					ready.Done()
				}
			}()
		}
		ready.Wait()
		return out
	}
	waitAll := func(subs []*arrivals, revision int, sent time.Time) []time.Duration {
		t.Helper()
		lat := make([]time.Duration, 0, len(subs))
		deadline := time.Now().Add(5 * time.Second)
		for _, a := range subs {
			for {
				a.mu.Lock()
				at, ok := a.at[revision]
				a.mu.Unlock()
				if ok {
					lat = append(lat, at.Sub(sent))
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("a subscriber did not receive revision %d within 5 s", revision)
				}
				time.Sleep(200 * time.Microsecond)
			}
		}
		return lat
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	one := subscribe(ctx, 1)
	var lat []time.Duration
	for i := range switches {
		sent := switchTo(2 - i%2)
		lat = append(lat, waitAll(one, rev, sent)...)
	}
	slices.Sort(lat)
	t.Logf("switch on node-0 -> SSE event on node-1, %d switches: p50 %v p99 %v max %v (target p99 < 100 ms: %s)",
		len(lat), pct(lat, .5).Round(time.Microsecond), pct(lat, .99).Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond),
		metOrMissed(pct(lat, .99) < 100*time.Millisecond))

	pid := c.nodes[1].PID()
	before := rssKiB(pid)
	const many = 1000
	var opened atomic.Int64
	subs := subscribe(ctx, many)
	opened.Store(int64(len(subs)))
	during := rssKiB(pid)
	lat = lat[:0]
	for i := range 20 {
		sent := switchTo(2 - i%2)
		lat = append(lat, waitAll(subs, rev, sent)...)
	}
	slices.Sort(lat)
	after := rssKiB(pid)
	t.Logf("%d subscribers on node-1, 20 switches on node-0 (%d deliveries): p50 %v p99 %v max %v; node-1 RSS %d MiB before, %d MiB with the streams open, %d MiB after the switches",
		opened.Load(), len(lat), pct(lat, .5).Round(time.Microsecond), pct(lat, .99).Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond),
		before/1024, during/1024, after/1024)
}

// sseReadEvents reads a stream as a runtime, calling open once the stream
// is open and fn with the revision of each event.
func sseReadEvents(ctx context.Context, url string, open func(), fn func(revision int)) error {
	return sseStream(ctx, url, runtimeToken, open, func(data []byte) {
		var e struct{ Revision int }
		if jsonUnmarshal(data, &e) == nil {
			fn(e.Revision)
		}
	})
}
