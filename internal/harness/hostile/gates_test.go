package hostile

import (
	"fmt"
	"net/http"
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
