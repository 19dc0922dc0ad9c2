package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"
)

func newKey() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Double texting over HTTP: 50 writers on one session through three
// instances, each reading the revision and appending with retries; a retry
// after an unknown outcome reuses the Idempotency-Key. Final turns =
// acknowledged appends, no duplicate, seqs contiguous; then the same with a
// lease (wait mode) per write.
func TestE2E_doubleTexting_fiftyWriters(t *testing.T) {
	onEachBackend(t, 3, doubleTexting)
}

func doubleTexting(t *testing.T, c *cluster) {
	a := c.nodes[0].URL
	seed(t, a, "chat", "prod", 1)
	for _, mode := range []string{"optimistic", "lease"} {
		id := "dt-" + mode
		must(t, 201, "POST", a+"/v1/sessions", runtimeToken, map[string]any{"session_id": id, "agent": "chat", "env": "prod"})
		var mu sync.Mutex
		acked := map[string]int64{}
		retries, replays := 0, 0
		var wg sync.WaitGroup
		for w := 0; w < 50; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				node := c.nodes[w%len(c.nodes)].URL
				text := fmt.Sprint("writer ", w)
				for attempt := 0; attempt < 300; attempt++ {
					body := map[string]any{"turns": []map[string]any{{"role": "user", "content": text}}}
					var token string
					if mode == "lease" {
						var l struct {
							Token string
							Fence int64
						}
						r, err := call("POST", node+"/v1/sessions/"+id+"/lease", runtimeToken, map[string]any{"holder": text, "ttl_ms": 10000, "wait_ms": 30000, "mode": "wait"})
						if err != nil || r.Status != 200 {
							t.Errorf("lease: %v %d %s", err, r.Status, r.Body)
							return
						}
						_ = json.Unmarshal(r.Body, &l)
						token, body["fence"] = l.Token, l.Fence
					}
					var s struct{ Revision int64 }
					must(t, 200, "GET", node+"/v1/sessions/"+id+"?limit=1", runtimeToken, nil).json(t, &s)
					body["expected_revision"] = s.Revision
					key := newKey()
					var r resp
					var err error
					for try := 0; try < 5; try++ { // an unknown outcome is retried with the same key and body
						if r, err = call("POST", node+"/v1/sessions/"+id+"/turns", runtimeToken, body, "Idempotency-Key", key); err == nil {
							break
						}
					}
					if token != "" {
						_, _ = call("DELETE", node+"/v1/sessions/"+id+"/lease", runtimeToken, nil, "Lease-Token", token)
					}
					if err != nil {
						t.Errorf("append: %v", err)
						return
					}
					if r.Status == 409 || r.Status == 423 {
						mu.Lock()
						retries++
						mu.Unlock()
						continue
					}
					if r.Status != 201 {
						t.Errorf("append: %d %s", r.Status, r.Body)
						return
					}
					var out struct{ Seqs []int64 }
					_ = json.Unmarshal(r.Body, &out)
					mu.Lock()
					if r.Header.Get("Idempotent-Replayed") == "true" {
						replays++
					}
					acked[text] = out.Seqs[0]
					mu.Unlock()
					return
				}
				t.Errorf("%s gave up", text)
			}()
		}
		wg.Wait()
		var s struct {
			Revision int64
			Turns    []struct {
				Seq     int64
				Content string
			}
		}
		must(t, 200, "GET", c.nodes[2].URL+"/v1/sessions/"+id+"?limit=500", runtimeToken, nil).json(t, &s)
		seen := map[string]bool{}
		for i, tr := range s.Turns {
			if tr.Seq != int64(i+1) || seen[tr.Content] || acked[tr.Content] != tr.Seq {
				t.Fatalf("%s: turn %d = seq %d %q (acked at %d, duplicate %v)", mode, i, tr.Seq, tr.Content, acked[tr.Content], seen[tr.Content])
			}
			seen[tr.Content] = true
		}
		if len(s.Turns) != 50 || len(acked) != 50 {
			t.Fatalf("%s: %d turns, %d acknowledged", mode, len(s.Turns), len(acked))
		}
		t.Logf("%s: 50 writers over 3 instances: 50 turns, seqs 1..50, no duplicate; %d retries after 409/423, %d replays", mode, retries, replays)
	}
}

// Generic leases over HTTP: two workers lock {order:1, machine:3} and
// {machine:3, order:1} 1,000 times each through two instances: no
// deadlock, never both inside, all complete.
func TestE2E_genericLeases_oppositeOrders(t *testing.T) {
	onEachBackend(t, 2, genericLeasesOppositeOrders)
}

func genericLeasesOppositeOrders(t *testing.T, c *cluster) {
	var inside, maxInside int
	var mu sync.Mutex
	var wg sync.WaitGroup
	done := [2]int{}
	start := time.Now()
	for w, res := range [][]string{{"order:1", "machine:3"}, {"machine:3", "order:1"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			node := c.nodes[w].URL
			for i := 0; i < 1000; i++ {
				var l struct {
					LeaseID string `json:"lease_id"`
					Token   string
				}
				r, err := call("POST", node+"/v1/leases", runtimeToken, map[string]any{"resources": res, "holder": fmt.Sprint("worker-", w), "ttl_ms": 5000, "wait_ms": 10000})
				if err != nil || r.Status != 200 {
					t.Errorf("worker %d round %d: %v %d %s", w, i, err, r.Status, r.Body)
					return
				}
				_ = json.Unmarshal(r.Body, &l)
				mu.Lock()
				inside++
				maxInside = max(maxInside, inside)
				mu.Unlock()
				time.Sleep(100 * time.Microsecond) // the work under both locks
				mu.Lock()
				inside--
				mu.Unlock()
				if r, err := call("DELETE", node+"/v1/leases/"+l.LeaseID, runtimeToken, nil, "Lease-Token", l.Token); err != nil || r.Status != 204 {
					t.Errorf("release: %v %d %s", err, r.Status, r.Body)
					return
				}
				done[w]++
			}
		}()
	}
	wg.Wait()
	if done != [2]int{1000, 1000} || maxInside != 1 {
		t.Fatalf("done %v, at most %d inside", done, maxInside)
	}
	t.Logf("2 workers x 1,000 rounds in opposite orders over 2 instances: all done in %v, never both inside", time.Since(start).Round(time.Millisecond))
}
