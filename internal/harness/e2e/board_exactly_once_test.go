package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	pclient "github.com/promptd/promptd/api/client"
)

// boardE2ERecords is the record count of the exactly-once run: 1,500 by
// default (CI), PROMPTD_BOARD_E2E_RECORDS for the full 10,000.
func boardE2ERecords() int {
	if n, err := strconv.Atoi(os.Getenv("PROMPTD_BOARD_E2E_RECORDS")); err == nil && n > 0 {
		return n
	}
	return 1500
}

// claimSpan is one granted claim as a claimer saw it: sent is when the
// claim request left, granted when its answer came, done when the
// record's completion (under the claim's fence) was answered.
type claimSpan struct {
	id                    string
	priority              int64
	fence                 int64
	sent, granted, doneAt time.Time
	claimer               int
}

// TestBoard_threeInstances32Claimers_everyRecordDoneExactlyOnceInPriorityOrder:
// 3 promptd processes on one MariaDB and one Redis; records with random
// priorities; 32 claimers spread over the instances, each claim -> running
// -> done with its fence. Every record is claimed once and done once; no
// two claims of a record overlap; and no claim took a record while a
// record of higher priority was still pending and not being claimed (a
// claim of priority p answered before a higher-priority record's claim
// was even sent).
func TestBoard_threeInstances32Claimers_everyRecordDoneExactlyOnceInPriorityOrder(t *testing.T) {
	c := startCluster(t, 3, nil)
	n := boardE2ERecords()
	const claimers, board = 32, "e2e-once"
	ctx := context.Background()
	urls := make([]string, len(c.nodes))
	clients := make([]*pclient.Client, len(c.nodes))
	for i, node := range c.nodes {
		urls[i] = node.URL
		clients[i] = pclient.New(node.URL, runtimeToken)
	}
	admin := pclient.New(urls[0], adminToken)
	def := pclient.BoardDefinition{States: []string{"pending", "claimed", "running", "done", "failed"}, Initial: "pending",
		Transitions: map[string][]string{"pending": {"claimed"}, "claimed": {"running", "pending"}, "running": {"done", "failed", "pending"}},
		Claim:       pclient.ClaimRule{From: "pending", To: "claimed", TTLMs: 60000, ReclaimTo: "pending", MaxAttempts: 5, Exhausted: "failed"},
		Terminal:    []string{"done", "failed"}}
	if _, err := admin.PutBoard(ctx, board, def, 0); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	prio := make(map[string]int64, n)
	var wg sync.WaitGroup
	ids := make(chan int)
	var mu sync.Mutex
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ids {
				id, p := fmt.Sprint("r", i), int64(rand.IntN(10))
				if _, _, err := clients[i%len(clients)].CreateRecord(ctx, board, pclient.NewRecord{ID: id, Payload: i, Priority: p}); err != nil {
					t.Errorf("create %s: %v", id, err)
					return
				}
				mu.Lock()
				prio[id] = p
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < n; i++ {
		ids <- i
	}
	close(ids)
	wg.Wait()
	if t.Failed() {
		return
	}
	created := time.Since(start)

	start = time.Now()
	var (
		spans []claimSpan
		errs  []error
	)
	for w := 0; w < claimers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := clients[w%len(clients)]
			holder := fmt.Sprint("claimer-", w)
			for {
				sent := time.Now()
				g, err := cl.ClaimNext(ctx, board, pclient.ClaimRequest{Holder: holder})
				granted := time.Now()
				if err == nil && g != nil {
					var r *pclient.Record
					r, err = cl.UpdateRecord(ctx, board, g.Record.ID, pclient.RecordUpdate{ExpectedRevision: g.Record.Revision, State: "running", Fence: g.Fence})
					if err == nil {
						_, err = cl.UpdateRecord(ctx, board, g.Record.ID, pclient.RecordUpdate{ExpectedRevision: r.Revision, State: "done",
							Payload: map[string]any{"by": holder}, Fence: g.Fence})
					}
					mu.Lock()
					spans = append(spans, claimSpan{id: g.Record.ID, priority: g.Record.Priority, fence: g.Fence, sent: sent, granted: granted,
						doneAt: time.Now(), claimer: w})
					mu.Unlock()
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s: %w", holder, err))
					mu.Unlock()
					return
				}
				if g == nil {
					return // 204: nothing left that is not being claimed
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	for _, err := range errs {
		t.Error(err)
	}

	// exactly once, from the claimers' side and from the records
	per := map[string][]claimSpan{}
	for _, s := range spans {
		per[s.id] = append(per[s.id], s)
		if s.priority != prio[s.id] {
			t.Errorf("%s claimed with priority %d, created with %d", s.id, s.priority, prio[s.id])
		}
	}
	twice, overlaps := 0, 0
	for id, ss := range per {
		if len(ss) != 1 {
			twice++
			t.Errorf("%s claimed %d times", id, len(ss))
		}
		slices.SortFunc(ss, func(a, b claimSpan) int { return a.granted.Compare(b.granted) })
		for i := 1; i < len(ss); i++ {
			if ss[i].granted.Before(ss[i-1].doneAt) {
				overlaps++
			}
		}
	}
	if len(per) != n {
		t.Errorf("%d of %d records claimed", len(per), n)
	}
	notDone, cursor := 0, ""
	for {
		items, next, err := clients[0].ListRecords(ctx, board, pclient.ListRecordsOptions{Limit: 500, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range items {
			if r.State != "done" || r.Attempts != 1 || r.Owner != nil {
				notDone++
				if notDone <= 5 {
					t.Errorf("record %s: state %s, attempts %d, owner %v", r.ID, r.State, r.Attempts, r.Owner != nil)
				}
			}
		}
		if cursor = next; next == "" {
			break
		}
	}

	// priority order: for each priority p, no claim of a record of higher
	// priority was sent after a claim of p was answered
	firstGranted := map[int64]time.Time{}
	lastSent := map[int64]time.Time{}
	for _, s := range spans {
		if g, ok := firstGranted[s.priority]; !ok || s.granted.Before(g) {
			firstGranted[s.priority] = s.granted
		}
		if l, ok := lastSent[s.priority]; !ok || s.sent.After(l) {
			lastSent[s.priority] = s.sent
		}
	}
	inversions := 0
	for p, g := range firstGranted {
		for q, l := range lastSent {
			if q > p && l.After(g) {
				inversions++
				t.Errorf("a claim of priority %d was answered at +%s, yet a record of priority %d was still unclaimed until +%s",
					p, g.Sub(start), q, l.Sub(start))
			}
		}
	}
	t.Logf("%d records (created in %s), %d claimers on %d instances: %d claim+running+done cycles in %s (%.0f/s); "+
		"claimed more than once %d, overlapping claims %d, not done %d, priority inversions %d",
		n, created.Round(time.Millisecond), claimers, len(c.nodes), len(spans), took.Round(time.Millisecond),
		float64(len(spans))/took.Seconds(), twice, overlaps, notDone, inversions)
}
