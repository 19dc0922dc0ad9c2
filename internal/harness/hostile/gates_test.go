package hostile

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Racing a strengthening protection PUT (never gated) with a weakening
// one whose expected_revision is one ahead used to lift the protection
// with no approval: the gate compared against an unlocked read. Now the
// weakening is decided against the locked row: it is a change request, or
// a conflict, never applied.
func TestHostile_gates_weakeningRaceNeverLiftsAProtection(t *testing.T) {
	eachStore(t, nil, func(t *testing.T, s *Server) {
		s.Publish(t, "probe", 0, "v1")
		for i := range 30 {
			env := fmt.Sprintf("race%d", i)
			s.Must(t, http.StatusCreated, "PUT", "/v1/agents/probe/envs/"+env, AdminToken, map[string]any{"version": 1, "expected_revision": 0})
			s.Must(t, http.StatusOK, "PUT", "/v1/protections/"+env, AdminToken, map[string]any{"approvals": 1, "expected_revision": 0})
			var wg sync.WaitGroup
			var weak *Resp
			wg.Add(2)
			go func() {
				defer wg.Done()
				weak = s.Do(t, "PUT", "/v1/protections/"+env, AdminToken, map[string]any{"approvals": 0, "expected_revision": 2})
			}()
			go func() {
				defer wg.Done()
				time.Sleep(time.Duration(i%6) * 200 * time.Microsecond)
				s.Do(t, "PUT", "/v1/protections/"+env, AdminToken, map[string]any{"approvals": 2, "expected_revision": 1})
			}()
			wg.Wait()
			if weak.Status/100 == 5 {
				t.Fatalf("round %d: %d %s", i, weak.Status, weak.Body)
			}
			// The probe: a pointer switch in env is still gated.
			if r := s.Point(t, "probe", env, 1, 1); r.Status != http.StatusAccepted {
				t.Fatalf("round %d on %s: a switch after the race = %d: the protection was lifted without approval (the weakening PUT answered %d)",
					i, s.Store, r.Status, weak.Status)
			}
		}
	})
}

// PATCH {"guard": null} on a release its guard paused used to erase the
// trip, never gated, and the resume then went through with no approval.
// Now the release stays paused_by_guard; removing its guard and resuming
// it are change requests.
func TestHostile_gates_guardRemovalDoesNotUngateTheResume(t *testing.T) {
	eachStore(t, map[string]string{"PROMPTD_GUARD_EVERY": "200ms"}, func(t *testing.T, s *Server) {
		s.Publish(t, "support", 0, "v1")
		s.Publish(t, "support", 1, "v2")
		s.Must(t, http.StatusCreated, "PUT", "/v1/agents/support/envs/prod", AdminToken, map[string]any{"version": 1, "expected_revision": 0})
		rel := s.Must(t, http.StatusCreated, "POST", "/v1/agents/support/envs/prod/releases", AdminToken, map[string]any{
			"candidate_version": 2, "percent": 50,
			"guard": map[string]any{"metric": "failure_rate", "max_degradation": 2, "action": "pause", "min_samples": 100}}).JSON
		id := rel["id"].(string)
		s.Must(t, http.StatusOK, "PUT", "/v1/protections/prod", AdminToken, map[string]any{"approvals": 1})
		at := time.Now().UTC().Format(time.RFC3339Nano)
		for arm, version := range map[string]int{"baseline": 1, "candidate": 2} {
			items := make([]map[string]any, 200)
			for i := range items {
				items[i] = map[string]any{"agent": "support", "env": "prod", "release_id": id, "arm": arm, "version": version,
					"reason": "bucket", "success": arm == "baseline" || i%2 == 0, "at": at}
			}
			s.Must(t, http.StatusOK, "POST", "/v1/outcomes", RuntimeToken, map[string]any{"items": items})
		}
		var cur map[string]any
		for deadline := time.Now().Add(20 * time.Second); ; {
			cur = s.Must(t, http.StatusOK, "GET", "/v1/releases/"+id, AdminToken, nil).JSON
			if cur["paused_by_guard"] == true || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if cur["paused_by_guard"] != true || cur["state"] != "paused" {
			t.Fatalf("the guard did not trip: state %v, paused_by_guard %v", cur["state"], cur["paused_by_guard"])
		}
		rev := cur["revision"].(float64)
		r := s.Do(t, "PATCH", "/v1/releases/"+id, AdminToken, map[string]any{"guard": nil, "expected_revision": rev})
		if r.Status != http.StatusAccepted {
			t.Fatalf("removing the guard of a release its guard paused = %d %s; want 202 (a change request)", r.Status, r.Body)
		}
		if r := s.Do(t, "POST", "/v1/releases/"+id+"/resume", AdminToken, nil); r.Status != http.StatusAccepted {
			t.Fatalf("resume = %d %s; want 202", r.Status, r.Body)
		}
		if st := s.Must(t, http.StatusOK, "GET", "/v1/releases/"+id, AdminToken, nil).JSON["state"]; st != "paused" {
			t.Fatalf("state after the attack = %v; want paused", st)
		}
	})
}

// Under load, the gated writes (promote, a percent increase, an env
// rollback to another version, lifting a revocation, a pointer switch)
// used to read their target outside the write and take a failed read (a
// SQL timeout: easy on SQLite under a flood) for "not gated": the write
// went through in a protected env. Now the decision is made inside the
// write's transaction from the rows it locks, and a failure refuses. The
// attack: flood the server with heavy reads and concurrent writes while
// firing every gated write, many times over; none may be applied, and the
// env, release and revocation must be as before.
func TestHostile_gates_underLoad_gatedWritesAreNeverAppliedWithoutApproval(t *testing.T) {
	eachStore(t, nil, func(t *testing.T, s *Server) {
		big := strings.Repeat("x", 300_000)
		for i := range 3 {
			s.Publish(t, fmt.Sprintf("load%d", i), 0, big)
			s.Must(t, http.StatusCreated, "PUT", fmt.Sprintf("/v1/agents/load%d/envs/prod", i), AdminToken, map[string]any{"version": 1, "expected_revision": 0})
		}
		for _, agent := range []string{"support", "other"} {
			for v := range 4 {
				s.Publish(t, agent, v, fmt.Sprintf("v%d", v+1))
			}
			s.Must(t, http.StatusCreated, "PUT", "/v1/agents/"+agent+"/envs/prod", AdminToken, map[string]any{"version": 1, "expected_revision": 0})
			s.Must(t, http.StatusOK, "PUT", "/v1/agents/"+agent+"/envs/prod", AdminToken, map[string]any{"version": 2, "expected_revision": 1})
		}
		// other: v1 -> v2 -> v3, so a rollback's default target is v2 (never
		// gated) and one to v1 is gated; v4 is revoked.
		s.Must(t, http.StatusOK, "PUT", "/v1/agents/other/envs/prod", AdminToken, map[string]any{"version": 3, "expected_revision": 2})
		s.Must(t, http.StatusOK, "POST", "/v1/agents/other/envs/prod/revocations", AdminToken, map[string]any{"version": 4, "reason": "bad"})
		rel := s.Must(t, http.StatusCreated, "POST", "/v1/agents/support/envs/prod/releases", AdminToken,
			map[string]any{"candidate_version": 1, "percent": 10}).JSON
		id := rel["id"].(string)
		s.Must(t, http.StatusOK, "PUT", "/v1/protections/prod", AdminToken, map[string]any{"approvals": 1})
		before := s.Must(t, http.StatusOK, "GET", "/v1/agents/other/envs/prod", AdminToken, nil).JSON
		rev := before["revision"]
		relRev := rel["revision"]

		stop := make(chan struct{})
		var load sync.WaitGroup
		for i := range 6 {
			load.Go(func() {
				for n := 0; ; n++ {
					select {
					case <-stop:
						return
					default:
					}
					if i%2 == 0 {
						s.Do(t, "GET", "/v1/bundle", RuntimeToken, nil)
					} else { // writes that hold the database's write lock
						s.Do(t, "POST", fmt.Sprintf("/v1/agents/load%d/versions", i/2), AdminToken,
							map[string]any{"base_version": 0, "config": map[string]any{"system": fmt.Sprintf("%s %d", big[:50_000], n)}})
					}
				}
			})
		}
		gated := []struct {
			name, method, path string
			body               map[string]any
		}{
			{"promote", "POST", "/v1/releases/" + id + "/promote", map[string]any{"reason": "ship it"}},
			{"percent increase", "PATCH", "/v1/releases/" + id, map[string]any{"percent": 90, "expected_revision": relRev}},
			{"env rollback to another version than its default", "POST", "/v1/agents/other/envs/prod/rollback", map[string]any{"to_version": 1, "expected_revision": rev}},
			{"lift a revocation", "DELETE", "/v1/agents/other/envs/prod/revocations/4", map[string]any{}},
			{"pointer switch", "PUT", "/v1/agents/other/envs/prod", map[string]any{"version": 1, "expected_revision": rev}},
		}
		answers := map[string]map[int]int{}
		codes := map[string]int{} // the problem codes of the answers that are not 202
		var mu sync.Mutex
		var attack sync.WaitGroup
		for round := range 8 {
			for _, g := range gated {
				attack.Go(func() {
					r := s.Do(t, g.method, g.path, AdminToken, g.body)
					mu.Lock()
					if answers[g.name] == nil {
						answers[g.name] = map[int]int{}
					}
					answers[g.name][r.Status]++
					if r.Status != http.StatusAccepted {
						codes[g.name+" "+r.Code()]++
					}
					mu.Unlock()
					if r.Status == http.StatusOK || r.Status == http.StatusCreated || r.Status == http.StatusNoContent {
						t.Errorf("round %d: %s in a protected env under load = %d %.200s: applied with no approval", round, g.name, r.Status, r.Body)
					}
				})
			}
		}
		attack.Wait()
		close(stop)
		load.Wait()
		t.Logf("%s: gated writes under load answered %v; not 202: %v", s.Store, answers, codes)
		after := s.Must(t, http.StatusOK, "GET", "/v1/agents/other/envs/prod", AdminToken, nil).JSON
		if after["version"] != before["version"] || after["revision"] != before["revision"] || fmt.Sprint(after["revoked"]) != "[4]" {
			t.Fatalf("the env changed: %v -> %v", before, after)
		}
		r := s.Must(t, http.StatusOK, "GET", "/v1/releases/"+id, AdminToken, nil).JSON
		if r["state"] != "running" || fmt.Sprint(r["percent"]) != "10" {
			t.Fatalf("the release changed: state %v, percent %v", r["state"], r["percent"])
		}
	})
}
