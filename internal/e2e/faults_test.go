package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promptd/promptd/internal/testenv"
)

// faultCluster is three promptd processes on a private Redis and a private
// MariaDB, so faults can be injected into each.
type faultCluster struct {
	cluster
	db *testenv.MariaDB
}

func startFaultCluster(t *testing.T) *faultCluster {
	t.Helper()
	db := testenv.StartMariaDB(t)
	srv := testenv.StartRedis(t)
	c := &faultCluster{cluster: cluster{redis: srv}, db: db}
	for i := 0; i < 3; i++ {
		c.nodes = append(c.nodes, testenv.StartPromptd(t, map[string]string{"PROMPTD_MYSQL_DSN": db.DSN(), "PROMPTD_REDIS_URL": srv.URL(),
			"PROMPTD_TOKENS": tokens, "PROMPTD_INSTANCE_ID": fmt.Sprint("node-", i), "PROMPTD_RECONCILE_EVERY": "1s"}))
	}
	return c
}

// ledger records what the workload was told.
type ledger struct {
	mu       sync.Mutex
	versions map[string]int // agent/text -> acknowledged version
	turns    map[string]int64
	calls    map[string]int // outcome counts: ok, rejected, unknown, 5xx
	fivexx   []string
	reads    [2]int64 // resolve ok, resolve total
}

func (l *ledger) outcome(kind string, r resp, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err != nil:
		l.calls[kind+" unknown"]++
	case r.Status >= 500 && r.Status != http.StatusServiceUnavailable:
		l.calls["500"]++
		l.fivexx = append(l.fivexx, fmt.Sprintf("%s: %d %s", kind, r.Status, r.Body))
	case r.Status >= 400:
		l.calls[kind+" rejected"]++
	default:
		l.calls[kind+" ok"]++
	}
}

// runWorkload drives version creates, session appends and resolves over
// all nodes until stop is closed.
func runWorkload(t *testing.T, c *faultCluster, l *ledger, stop chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	var seq atomic.Int64
	for p := 0; p < 3; p++ { // publishers, one agent each
		wg.Add(1)
		go func() {
			defer wg.Done()
			agent, base := fmt.Sprint("pub-", p), 0
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				node := c.nodes[(p+i)%3].URL
				text := fmt.Sprintf("%s config %d", agent, seq.Add(1))
				r, err := call("POST", node+"/v1/agents/"+agent+"/versions", adminToken,
					map[string]any{"base_version": base, "config": map[string]any{"system": text}})
				l.outcome("create", r, err)
				var v struct {
					Version       int
					LatestVersion int `json:"latest_version"`
				}
				_ = json.Unmarshal(r.Body, &v)
				switch {
				case err == nil && r.Status == 201:
					l.mu.Lock()
					l.versions[agent+"/"+text] = v.Version
					l.mu.Unlock()
					base = v.Version
				case err == nil && r.Status == 409:
					base = v.LatestVersion
				case err != nil: // unknown outcome: learn the base again
					time.Sleep(50 * time.Millisecond)
					if lr, err := call("GET", node+"/v1/agents", runtimeToken, nil); err == nil && lr.Status == 200 {
						var list struct {
							Items []struct {
								Agent         string
								LatestVersion int `json:"latest_version"`
							}
						}
						_ = json.Unmarshal(lr.Body, &list)
						for _, a := range list.Items {
							if a.Agent == agent {
								base = a.LatestVersion
							}
						}
					}
				default:
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}
	for w := 0; w < 3; w++ { // appenders on one session each, unfenced, retrying
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprint("faults-", w)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				node := c.nodes[(w+i)%3].URL
				var s struct{ Revision int64 }
				gr, err := call("GET", node+"/v1/sessions/"+id+"?limit=1", runtimeToken, nil)
				if err != nil || gr.Status != 200 {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				_ = json.Unmarshal(gr.Body, &s)
				text := fmt.Sprintf("%s turn %d", id, seq.Add(1))
				body := map[string]any{"expected_revision": s.Revision, "turns": []map[string]any{{"role": "user", "content": text}}}
				key := newKey()
				var r resp
				for try := 0; try < 3; try++ { // same key and body after an unknown outcome
					if r, err = call("POST", node+"/v1/sessions/"+id+"/turns", runtimeToken, body, "Idempotency-Key", key); err == nil {
						break
					}
					node = c.nodes[(w+i+try+1)%3].URL
				}
				l.outcome("append", r, err)
				if err == nil && r.Status == 201 {
					var out struct{ Seqs []int64 }
					_ = json.Unmarshal(r.Body, &out)
					l.mu.Lock()
					l.turns[text] = out.Seqs[0]
					l.mu.Unlock()
				}
			}
		}()
	}
	for g := 0; g < 3; g++ { // readers
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_, code, err := resolve(c.nodes[rand.IntN(3)].URL, "pub-0", "prod", fmt.Sprint("u", i))
				l.mu.Lock()
				l.reads[1]++
				if err == nil && code == 200 {
					l.reads[0]++
				}
				if code >= 500 && code != 503 {
					l.calls["500"]++
					l.fivexx = append(l.fivexx, fmt.Sprint("resolve: ", code))
				}
				l.mu.Unlock()
			}
		}()
	}
	return &wg
}

// The faults of DESIGN.md's table, one at a time, under a mixed workload:
// nothing acknowledged is lost, no 500, and resolve keeps answering.
func TestFaults_acknowledgedWritesSurvive(t *testing.T) {
	faults := []struct {
		name   string
		inject func(c *faultCluster)
	}{
		{"redis SIGSTOP 2s (> lease TTLs)", func(c *faultCluster) { c.redis.Pause(); time.Sleep(2 * time.Second); c.redis.Resume() }},
		{"redis kill -9, restart empty", func(c *faultCluster) { c.redis.Kill(); time.Sleep(time.Second); c.redis.Restart() }},
		{"mariadb SIGSTOP 2s", func(c *faultCluster) { c.db.Pause(); time.Sleep(2 * time.Second); c.db.Resume() }},
		{"mariadb kill -9, restart", func(c *faultCluster) { c.db.Kill(); c.db.Restart() }},
		{"promptd kill -9 mid-writes, restart", func(c *faultCluster) { c.nodes[1].Kill(); time.Sleep(time.Second); c.nodes[1].Restart() }},
	}
	var table []string
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			c := startFaultCluster(t)
			a := c.nodes[0].URL
			seed(t, a, "pub-0", "prod", 1)
			for w := 0; w < 3; w++ {
				must(t, 201, "POST", a+"/v1/sessions", runtimeToken, map[string]any{"session_id": fmt.Sprint("faults-", w), "agent": "pub-0", "env": "prod"})
			}
			l := &ledger{versions: map[string]int{}, turns: map[string]int64{}, calls: map[string]int{}}
			stop := make(chan struct{})
			wg := runWorkload(t, c, l, stop)
			time.Sleep(1500 * time.Millisecond)
			f.inject(c)
			time.Sleep(2 * time.Second) // recovery under load
			close(stop)
			wg.Wait()

			lost := 0
			for key, v := range l.versions { // every acknowledged version, with its config
				agent, text, _ := strings.Cut(key, "/")
				var got struct{ Config struct{ System string } }
				r := must(t, 200, "GET", fmt.Sprintf("%s/v1/agents/%s/versions/%d", a, agent, v), runtimeToken, nil)
				r.json(t, &got)
				if got.Config.System != text {
					lost++
					t.Errorf("acknowledged %s v%d holds %q", agent, v, got.Config.System)
				}
			}
			for w := 0; w < 3; w++ { // every acknowledged turn, once, seqs contiguous
				var s struct {
					Turns []struct {
						Seq     int64
						Content string
					}
				}
				must(t, 200, "GET", fmt.Sprintf("%s/v1/sessions/faults-%d?limit=500", a, w), runtimeToken, nil).json(t, &s)
				seen := map[string]int64{}
				for i, tr := range s.Turns {
					if tr.Seq != int64(i+1) {
						t.Errorf("faults-%d: seq %d at %d", w, tr.Seq, i)
					}
					if _, dup := seen[tr.Content]; dup {
						t.Errorf("faults-%d: %q twice", w, tr.Content)
					}
					seen[tr.Content] = tr.Seq
				}
				for text, seq := range l.turns {
					if strings.HasPrefix(text, fmt.Sprintf("faults-%d ", w)) && seen[text] != seq {
						lost++
						t.Errorf("acknowledged %q (seq %d) is at %d", text, seq, seen[text])
					}
				}
			}
			if l.calls["500"] != 0 {
				t.Errorf("500s: %v", l.fivexx[:min(5, len(l.fivexx))])
			}
			avail := 100 * float64(l.reads[0]) / float64(max(l.reads[1], 1))
			row := fmt.Sprintf("| %s | %d versions, %d turns | %d | %d | %.2f%% of %d | %d/%d/%d | %d/%d/%d |", f.name,
				len(l.versions), len(l.turns), lost, l.calls["500"], avail, l.reads[1],
				l.calls["create ok"], l.calls["create rejected"], l.calls["create unknown"],
				l.calls["append ok"], l.calls["append rejected"], l.calls["append unknown"])
			table = append(table, row)
		})
	}
	t.Logf("\n| fault | acknowledged writes | lost | 500s | resolve availability | creates ok/rejected/unknown | appends ok/rejected/unknown |\n|---|---|---|---|---|---|---|\n%s",
		strings.Join(table, "\n"))
}
