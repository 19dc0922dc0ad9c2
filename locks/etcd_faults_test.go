package locks_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"

	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/locks"
)

// holding is one grant as its holder saw it: from the acquire's return to
// the moment it stopped (before its release was sent, or its local deadline
// when the lease was lost first).
type holding struct {
	key        string
	fence      int64
	start, end time.Time
	lost       bool
}

type faultLog struct {
	mu    sync.Mutex
	holds []holding
	fails int
}

func (f *faultLog) add(h holding) {
	f.mu.Lock()
	f.holds = append(f.holds, h)
	f.mu.Unlock()
}

// worker takes keys from m in a loop until ctx ends, holding each for a
// random time up to maxHold, and logs every grant.
func faultWorker(ctx context.Context, m *locks.Manager, keys []string, maxHold time.Duration, log *faultLog) {
	for ctx.Err() == nil {
		k := keys[rand.IntN(len(keys))]
		l, err := m.Acquire(ctx, k, time.Second, locks.WithWait(3*time.Second))
		if err != nil {
			log.mu.Lock()
			log.fails++
			log.mu.Unlock()
			time.Sleep(20 * time.Millisecond)
			continue
		}
		h := holding{key: k, fence: l.Fence(), start: time.Now()}
		select {
		case <-time.After(time.Duration(rand.Int64N(int64(maxHold)))):
		case <-l.Done():
		case <-ctx.Done():
		}
		h.end = time.Now()
		if l.Err() != nil {
			h.lost = true
			if d := l.ExpiresAt(); d.Before(h.end) {
				h.end = d
			}
		}
		log.add(h)
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = l.Release(rctx)
		cancel()
	}
}

// check counts grants of one key that overlapped (granted twice at once)
// and fences that did not grow in grant order.
func (f *faultLog) check() (double, regress, lost int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	byKey := map[string][]holding{}
	for _, h := range f.holds {
		byKey[h.key] = append(byKey[h.key], h)
		if h.lost {
			lost++
		}
	}
	for _, hs := range byKey {
		slices.SortFunc(hs, func(a, b holding) int { return a.start.Compare(b.start) })
		var lastEnd time.Time
		var lastFence int64
		for _, h := range hs {
			if h.start.Before(lastEnd) {
				double++
			}
			if h.fence <= lastFence {
				regress++
			}
			lastEnd, lastFence = later(lastEnd, h.end), h.fence
		}
	}
	return
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// above reports the highest fence granted before at and the lowest granted
// after it (0 when none).
func (f *faultLog) around(at time.Time) (maxBefore, minAfter int64, after int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, h := range f.holds {
		if h.start.Before(at) {
			maxBefore = max(maxBefore, h.fence)
		} else {
			after++
			if minAfter == 0 || h.fence < minAfter {
				minAfter = h.fence
			}
		}
	}
	return
}

// Faults on three members under a lease workload: the leader killed (-9)
// and restarted, the leader SIGSTOPped past the lease TTL, one holder's
// connection cut (a toxiproxy black hole). Through each: no key granted to
// two holders at once, no fence going backwards, and every grant after
// the fault above every fence before it.
func TestEtcdBackend_faults_neverGrantTwiceNorRegressFences(t *testing.T) {
	c := testenv.StartEtcdCluster(t, 3)
	eps := c.Endpoints()
	keys, err := faultKeys("k0", "k1", "cut")
	if err != nil {
		t.Fatal(err)
	}
	tp := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	newManager := func(name string, endpoints []string) *locks.Manager {
		o := locks.EtcdOptions{Keys: locks.Keys{Prefix: "faults"}, Timeout: 500 * time.Millisecond, Logger: quietLog()}
		m := locks.NewEtcd(testenv.EtcdClient(t, endpoints), o, locks.Options{Holder: name, Logger: quietLog()})
		t.Cleanup(func() { _ = m.Close(context.Background()) })
		return m
	}
	type step struct {
		name   string
		inject func(t *testing.T, cut *toxiproxy.Proxy)
	}
	steps := []step{
		{"leader kill -9, restart after 2s", func(t *testing.T, _ *toxiproxy.Proxy) {
			l := c.Leader(t)
			l.Kill()
			time.Sleep(2 * time.Second)
			l.Restart()
		}},
		{"leader SIGSTOP 3s (TTL 1s)", func(t *testing.T, _ *toxiproxy.Proxy) {
			l := c.Leader(t)
			l.Pause()
			time.Sleep(3 * time.Second)
			l.Resume()
		}},
		{"holder's connection cut 3s", func(t *testing.T, cut *toxiproxy.Proxy) {
			if _, err := cut.Toxics.AddToxicJson(strings.NewReader(`{"name":"fault","type":"timeout","stream":"downstream","attributes":{"timeout":0}}`)); err != nil {
				t.Fatal(err)
			}
			if _, err := cut.Toxics.AddToxicJson(strings.NewReader(`{"name":"fault-up","type":"timeout","stream":"upstream","attributes":{"timeout":0}}`)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(3 * time.Second)
			_ = cut.Toxics.RemoveToxic(context.Background(), "fault")
			_ = cut.Toxics.RemoveToxic(context.Background(), "fault-up")
		}},
	}
	var report []string
	for i, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			// the cut holder reaches one member (not the leader's) through a proxy
			p := toxiproxy.NewProxy(tp, fmt.Sprint("etcd-", i), "127.0.0.1:0", c.Members[(i+1)%3].Addr())
			if err := p.Start(); err != nil {
				t.Fatal(err)
			}
			defer p.Stop()
			log := &faultLog{}
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			run := func(m *locks.Manager, keys []string, hold time.Duration) {
				wg.Add(1)
				go func() { defer wg.Done(); faultWorker(ctx, m, keys, hold, log) }()
			}
			for w := range 3 {
				run(newManager(fmt.Sprint("w", w), []string{eps[w%3], eps[(w+1)%3], eps[(w+2)%3]}), keys, 300*time.Millisecond)
			}
			run(newManager("cut", []string{"http://" + p.Listen}), keys[2:], 2*time.Second)
			time.Sleep(2 * time.Second)
			at := time.Now()
			s.inject(t, p)
			time.Sleep(3 * time.Second)
			cancel()
			wg.Wait()
			double, regress, lost := log.check()
			maxBefore, minAfter, after := log.around(at)
			line := fmt.Sprintf("%-36s grants %4d (after the fault %3d), lost %d, failed acquires %d: granted twice at once %d, fence regressions %d, min fence after - max before = %d",
				s.name, len(log.holds), after, lost, log.fails, double, regress, minAfter-maxBefore)
			report = append(report, line)
			t.Log(line)
			if double != 0 || regress != 0 || after == 0 || minAfter <= maxBefore {
				t.Errorf("%s", line)
			}
		})
	}
	for _, l := range report {
		t.Log(l)
	}
}

func faultKeys(ids ...string) ([]string, error) {
	var out []string
	for _, id := range ids {
		k, err := locks.Keys{Prefix: "faults"}.Key("lease", id)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
