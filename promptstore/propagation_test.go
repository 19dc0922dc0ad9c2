package promptstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/sqlstore"
)

// Three instances on one Redis and one MariaDB: a switch through one is
// served by the others after the event; with pub/sub cut, the reconciler
// brings them over within its period.
func TestPropagation_threeInstances_eventsThenReconciler(t *testing.T) {
	db := testenv.OpenDB(t, sqlstore.Config{MySQLDSN: testenv.MySQLDSN(t)}, migrations())
	srv := testenv.StartRedis(t)
	keys := locks.Keys{Prefix: "prop"}
	var stores []*promptstore.Store
	for i := 0; i < 3; i++ {
		c := srv.Client(t)
		stores = append(stores, newStore(t, db, withRedis(t, promptstore.Options{Keys: keys,
			Instance: fmt.Sprint("i", i), Locker: locks.NewRedis(c, locks.RedisOptions{Keys: keys, Timeout: 100 * time.Millisecond}, locks.Options{})}, c, 100*time.Millisecond)))
	}
	a := stores[0]
	ctx := ctxT(t)
	for i := 0; i < 3; i++ {
		if _, err := a.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "a", BaseVersion: i, Config: cfg(fmt.Sprint("v", i+1))}); err != nil {
			t.Fatal(err)
		}
	}
	rev := int64(0)
	switchTo := func(v int) {
		t.Helper()
		e, err := a.SwitchPointer(ctx, promptstore.SwitchInput{Agent: "a", Env: "prod", Version: v, ExpectedRevision: &rev})
		if err != nil {
			t.Fatal(err)
		}
		rev = e.Revision
	}
	switchTo(1)
	for _, s := range stores { // warm every instance's cache
		if _, err := s.Pointer(ctx, "a", "prod"); err != nil {
			t.Fatal(err)
		}
	}
	// waitAll returns how long until every other instance serves revision r.
	waitAll := func(r int64, limit time.Duration) time.Duration {
		start := time.Now()
		for _, s := range stores[1:] {
			for {
				st, err := s.Pointer(ctx, "a", "prod")
				if err == nil && st.Revision >= r {
					break
				}
				if time.Since(start) > limit {
					t.Fatalf("revision %d not served after %v", r, limit)
				}
				time.Sleep(100 * time.Microsecond)
			}
		}
		return time.Since(start)
	}
	var lat []time.Duration
	for i := 0; i < 200; i++ {
		switchTo(i%3 + 1)
		lat = append(lat, waitAll(rev, 2*time.Second))
	}
	slices.Sort(lat)
	p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
	t.Logf("propagation to two other instances over pub/sub, 200 switches: p50 %v, p99 %v, max %v", p50, p99, lat[len(lat)-1])
	// The 100 ms p99 is a speed target, logged, not asserted (shared
	// machine); waitAll fails beyond its 2 s bound, which is the guarantee.
	t.Logf("p99 target < 100 ms met: %v", p99 < 100*time.Millisecond)

	// Cut pub/sub: Redis restarts empty; the subscriptions are gone while it is down.
	const period = 500 * time.Millisecond
	stop := make(chan struct{})
	defer close(stop)
	for _, s := range stores {
		go func() {
			tk := time.NewTicker(period)
			defer tk.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tk.C:
					_ = s.Reconcile(context.Background())
				}
			}
		}()
	}
	srv.Kill()
	switchTo(3) // Redis down: the lock and the event are lost, SQL decides
	d := waitAll(rev, 3*period)
	t.Logf("Redis down, event lost: every instance served the new pointer after %v (reconciler period %v)", d, period)
	srv.Restart()
	switchTo(1)
	d = waitAll(rev, 3*period)
	t.Logf("after Redis restarted empty: next switch served everywhere after %v", d)
}
