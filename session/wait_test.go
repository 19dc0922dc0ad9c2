package session_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/session"
	"github.com/promptd/promptd/sqlstore"
)

// Ten runtimes queue for one session lease in wait mode: each gets it in
// turn, never two at once, woken by the release (not by polling).
func TestLeaseWait_tenRuntimesTakeTurns(t *testing.T) {
	db := testenv.OpenDB(t, sqlstore.Config{MySQLDSN: testenv.MySQLDSN(t)}, migrations())
	w := newWorld(t, db)
	ctx := ctxT(t)
	if _, _, err := w.sess.Create(ctx, session.CreateInput{SessionID: "q", Agent: "a", Env: "prod"}); err != nil {
		t.Fatal(err)
	}
	type span struct {
		holder     string
		start, end time.Time
		fence      int64
	}
	var mu sync.Mutex
	var trace []span
	inside := 0
	const rounds = 5
	var wg sync.WaitGroup
	for r := 0; r < 10; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			holder := fmt.Sprint("runtime-", r)
			for i := 0; i < rounds; i++ {
				l, err := w.sess.AcquireLease(ctx, "q", session.LeaseInput{Holder: holder, TTL: 10 * time.Second, Wait: 30 * time.Second, Mode: session.ModeWait})
				if err != nil {
					t.Errorf("%s: %v", holder, err)
					return
				}
				mu.Lock()
				inside++
				if inside != 1 {
					t.Errorf("%d holders inside", inside)
				}
				sp := span{holder: holder, start: time.Now(), fence: l.Fence}
				mu.Unlock()
				time.Sleep(2 * time.Millisecond) // the work
				mu.Lock()
				inside--
				sp.end = time.Now()
				trace = append(trace, sp)
				mu.Unlock()
				if err := w.sess.ReleaseLease(ctx, "q", l.Token); err != nil {
					t.Errorf("release: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	slices.SortFunc(trace, func(a, b span) int { return a.start.Compare(b.start) })
	var gaps []time.Duration
	for i := 1; i < len(trace); i++ {
		if trace[i].start.Before(trace[i-1].end) {
			t.Fatalf("overlap: %+v and %+v", trace[i-1], trace[i])
		}
		if trace[i].fence <= trace[i-1].fence {
			t.Fatalf("fence did not grow: %d then %d", trace[i-1].fence, trace[i].fence)
		}
		gaps = append(gaps, trace[i].start.Sub(trace[i-1].end))
	}
	slices.Sort(gaps)
	p50, p99 := gaps[len(gaps)/2], gaps[len(gaps)*99/100]
	t.Logf("10 runtimes x %d turns: %d grants, no overlap, fences increasing; hand-over gap after release p50 %v p99 %v max %v",
		rounds, len(trace), p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), gaps[len(gaps)-1].Round(10*time.Microsecond))
	if len(trace) != 10*rounds {
		t.Fatalf("%d grants", len(trace))
	}
}
