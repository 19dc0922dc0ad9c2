package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/locks"
)

// takeoverBound is how soon after kill -9 of a cluster-singleton job's
// lease holder another instance runs the job, whatever its period.
const takeoverBound = 5 * time.Second

// singletonNodes are promptd processes on one MariaDB and one Redis that
// the singleton test kills one by one, starting another when fewer than two
// are left.
type singletonNodes struct {
	t     *testing.T
	vars  map[string]string
	nodes map[string]*testenv.Promptd // by PROMPTD_INSTANCE_ID, the lease holder name
	next  int
	locks *locks.Manager // reads holders straight from Redis
	keys  locks.Keys
}

func (s *singletonNodes) start() {
	s.t.Helper()
	id := fmt.Sprint("node-", s.next)
	s.next++
	vars := map[string]string{"PROMPTD_INSTANCE_ID": id}
	for k, v := range s.vars {
		vars[k] = v
	}
	s.nodes[id] = testenv.StartPromptd(s.t, vars)
}

// any is a live node other than not.
func (s *singletonNodes) any(not string) string {
	for id, p := range s.nodes {
		if id != not {
			return p.URL
		}
	}
	s.t.Fatal("no live node")
	return ""
}

// freezeHolder waits (up to wait) until a node holds job's lease, stops
// it (SIGSTOP) and makes sure it still holds the lease while stopped, so
// that the kill that follows is the kill of the holder in the middle of
// its hold. A lease still held by a node killed before is waited out. It
// returns the frozen node's id.
func (s *singletonNodes) freezeHolder(t *testing.T, job string, wait time.Duration) string {
	t.Helper()
	key, err := s.keys.Job(job)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		in, err := s.locks.Holder(ctx, key)
		if err != nil {
			time.Sleep(time.Millisecond)
			continue
		}
		p := s.nodes[in.Holder]
		if p == nil { // a node killed earlier: its lease runs to its TTL
			time.Sleep(time.Millisecond)
			continue
		}
		p.Pause()
		time.Sleep(50 * time.Millisecond) // what it sent before the stop has arrived
		again, err := s.locks.Holder(ctx, key)
		if err == nil && again.Holder == in.Holder && again.Fence == in.Fence {
			return in.Holder
		}
		p.Resume() // it let the lease go just before the stop: look again
	}
	t.Fatalf("no live node held %s within %v", key, wait)
	return ""
}

// kill kills the frozen node (SIGKILL) and starts another one if fewer
// than two are left; it returns the time of the kill.
func (s *singletonNodes) kill(id string) time.Time {
	s.t.Helper()
	s.nodes[id].Kill()
	at := time.Now()
	delete(s.nodes, id)
	for len(s.nodes) < 2 {
		s.start()
	}
	return at
}

// within polls cond until it holds or takeoverBound has passed since
// killed; it reports whether cond held in time and when.
func within(killed time.Time, cond func() bool) (time.Duration, bool) {
	for {
		if cond() {
			return time.Since(killed), true
		}
		if time.Since(killed) > takeoverBound {
			return time.Since(killed), false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// guardEvaluations sums promptd_release_guard_evaluations_total over the
// live nodes.
func (s *singletonNodes) guardEvaluations() float64 {
	var sum float64
	for _, p := range s.nodes {
		r, err := call("GET", p.URL+"/metrics", "", nil)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(r.Body))
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "promptd_release_guard_evaluations_total "); ok {
				f, _ := strconv.ParseFloat(v, 64)
				sum += f
			}
		}
	}
	return sum
}

// Issue 17: an instance SIGKILLed while it holds a cluster-singleton job's
// lease keeps the job from running only until the lease expires, and job
// leases are short (renewed while the job runs), so another instance runs
// each singleton within takeoverBound of the kill whatever the job's
// period: the board reclaim sweeper, the release steps, the guards and the
// session sweeper. One set of processes serves every case; each case
// freezes the holder in the middle of its hold, prepares what the job must
// do next (through another node), then kills it.
func TestE2E_singletonJobs_holderKilled_anotherInstanceRunsEachWithin5s(t *testing.T) {
	srv := testenv.StartRedis(t)
	opt, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	keys := locks.Keys{Prefix: "prompt"}
	s := &singletonNodes{t: t, nodes: map[string]*testenv.Promptd{}, keys: keys,
		locks: locks.NewRedis(rdb, locks.RedisOptions{Keys: keys, Timeout: time.Second}, locks.Options{}),
		vars: map[string]string{"PROMPTD_MYSQL_DSN": testenv.MySQLDSN(t), "PROMPTD_REDIS_URL": srv.URL(), "PROMPTD_TOKENS": tokens,
			"PROMPTD_RECONCILE_EVERY": "1s", "PROMPTD_GUARD_EVERY": "1s",
			// a loaded CI box must not make the job run unlocked (lock store "unavailable")
			"PROMPTD_REDIS_TIMEOUT": "1s"}}
	t.Cleanup(func() { _ = s.locks.Close(context.Background()) })
	s.start()
	s.start()

	a := s.any("")
	seed(t, a, "steps", "prod", 2)
	seed(t, a, "guarded", "prod", 2)
	seed(t, a, "chat", "prod", 1)
	must(t, 201, "PUT", a+"/v1/boards/jobs", adminToken, map[string]any{"states": []string{"todo", "doing", "done", "dropped"},
		"initial": "todo", "transitions": map[string][]string{"todo": {"doing", "dropped"}, "doing": {"done", "todo"}}, "claim": map[string]any{"from": "todo", "to": "doing", "ttl_ms": 5000, "exhausted": "dropped"},
		"terminal": []string{"done", "dropped"}, "expected_revision": 0})
	must(t, 201, "POST", a+"/v1/agents/guarded/envs/prod/releases", adminToken, map[string]any{"candidate_version": 2, "percent": 20,
		"guard": map[string]any{"metric": "failure_rate", "max_degradation": 2, "min_samples": 200, "confidence": 0.95, "action": "rollback"}})

	// The board sweeper: a claim of 500 ms taken while the sweeper's
	// holder is stopped is reclaimed by another instance.
	t.Run("board", func(t *testing.T) {
		frozen := s.freezeHolder(t, "board-reclaim", 75*time.Second)
		b := s.any(frozen)
		mustReportingLocks(t, s.vars["PROMPTD_MYSQL_DSN"], 201, "POST", b+"/v1/boards/jobs/records", runtimeToken, map[string]any{"id": "r1", "payload": map[string]any{}},
			"Idempotency-Key", "r1")
		must(t, 200, "POST", b+"/v1/boards/jobs/claim", runtimeToken, map[string]any{"holder": "w", "ttl_ms": 500}, "Idempotency-Key", "c1")
		killed := s.kill(frozen)
		took, ok := within(killed, func() bool {
			var rec struct{ State string }
			r, err := call("GET", s.any("")+"/v1/boards/jobs/records/r1", runtimeToken, nil)
			if err != nil || r.Status != 200 {
				return false
			}
			r.json(t, &rec)
			return rec.State == "todo"
		})
		if !ok {
			t.Errorf("a board claim of 500 ms was not reclaimed within %v of kill -9 of the sweeper's lease holder %s", took.Round(time.Millisecond), frozen)
		}
	})

	// The release steps: a step due one second after the stop is applied.
	t.Run("release-steps", func(t *testing.T) {
		frozen := s.freezeHolder(t, "release-steps", 75*time.Second)
		b := s.any(frozen)
		var rel struct{ ID string }
		mustReportingLocks(t, s.vars["PROMPTD_MYSQL_DSN"], 201, "POST", b+"/v1/agents/steps/envs/prod/releases", adminToken, map[string]any{"candidate_version": 2, "percent": 10,
			"steps": []map[string]any{{"percent": 50, "after": "1s"}}}).json(t, &rel)
		killed := s.kill(frozen)
		took, ok := within(killed, func() bool {
			var got struct {
				Percent json.Number `json:"percent"`
			}
			r, err := call("GET", s.any("")+"/v1/releases/"+rel.ID, runtimeToken, nil)
			if err != nil || r.Status != 200 {
				return false
			}
			r.json(t, &got)
			return got.Percent.String() == "50"
		})
		if !ok {
			t.Errorf("a release step due 1 s after the stop was not applied within %v of kill -9 of the steps job's lease holder %s", took.Round(time.Millisecond), frozen)
		}
	})

	// The guards: another instance evaluates the running guarded release.
	t.Run("release-guard", func(t *testing.T) {
		frozen := s.freezeHolder(t, "release-guard", 75*time.Second)
		killed := s.kill(frozen)
		before := s.guardEvaluations()
		took, ok := within(killed, func() bool { return s.guardEvaluations() > before })
		if !ok {
			t.Errorf("no guard was evaluated within %v of kill -9 of the guard job's lease holder %s", took.Round(time.Millisecond), frozen)
		}
	})

	// The session sweeper (a one-minute period): a session idle for 1 s
	// is closed.
	t.Run("session-sweep", func(t *testing.T) {
		frozen := s.freezeHolder(t, "session-sweep", 75*time.Second)
		b := s.any(frozen)
		var sess struct {
			SessionID string `json:"session_id"`
		}
		mustReportingLocks(t, s.vars["PROMPTD_MYSQL_DSN"], 201, "POST", b+"/v1/sessions", runtimeToken, map[string]any{"agent": "chat", "env": "prod", "user_id": "u1", "idle_ttl_ms": 1000}).json(t, &sess)
		killed := s.kill(frozen)
		took, ok := within(killed, func() bool {
			var got struct{ State string }
			r, err := call("GET", s.any("")+"/v1/sessions/"+sess.SessionID, runtimeToken, nil)
			if err != nil || r.Status != 200 {
				return false
			}
			r.json(t, &got)
			return got.State == "closed"
		})
		if !ok {
			t.Errorf("a session idle past its 1 s TTL was not swept within %v of kill -9 of the session sweeper's lease holder %s", took.Round(time.Millisecond), frozen)
		}
	})

	// The other singletons run hourly or every few minutes, too seldom to
	// see a run within the bound; what the bound rests on is seen instead:
	// a successor leads the job (holds its lease, and a leader runs the job
	// as soon as it takes it) within takeoverBound of the kill.
	for _, job := range []string{"idempotency-sweep", "audit-retention", "webhook-retention", "outcome-dedupe-sweep",
		"exposure-retention", "change-request-expiry"} {
		t.Run(job, func(t *testing.T) {
			frozen := s.freezeHolder(t, job, 75*time.Second)
			key, err := s.keys.Job(job)
			if err != nil {
				t.Fatal(err)
			}
			killed := s.kill(frozen)
			var leader string
			took, ok := within(killed, func() bool {
				in, err := s.locks.Holder(t.Context(), key)
				if err != nil || in.Holder == frozen || s.nodes[in.Holder] == nil {
					return false
				}
				leader = in.Holder
				return true
			})
			if !ok {
				t.Errorf("no live instance led %s within %v of kill -9 of its leader %s", job, took.Round(time.Millisecond), frozen)
			}
			t.Logf("%s: %s led it %v after kill -9 of %s", job, leader, took.Round(time.Millisecond), frozen)
		})
	}
}
