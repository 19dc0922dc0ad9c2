package api_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestRelease_withAGuardOutOfRange_is422NamingTheFieldAndWritesNothing(t *testing.T) {
	a := sqliteApp(t)
	a.withVersions(2)
	before := a.releaseCounts()
	for body, field := range map[string]string{
		`{"candidate_version": 2, "percent": 20, "guard": {"metric": "failure_rate", "max_degradation": 120}}`:                   "guard.max_degradation",
		`{"candidate_version": 2, "percent": 20, "guard": {"metric": "latency", "max_degradation": 2}}`:                          "guard.metric",
		`{"candidate_version": 2, "percent": 20, "guard": {"metric": "score", "max_degradation": 0.1, "confidence": 1}}`:         "guard.confidence",
		`{"candidate_version": 2, "percent": 20, "guard": {"metric": "score", "max_degradation": 0.1, "min_samples": 2}}`:        "guard.min_samples",
		`{"candidate_version": 2, "percent": 20, "guard": {"metric": "failure_rate", "max_degradation": 2, "action": "delete"}}`: "guard.action",
		`{"candidate_version": 2, "percent": 20, "guard": {"metric": "failure_rate"}}`:                                           "guard.max_degradation",
	} {
		rec := a.do("POST", releasesPath, admin, body)
		p := problem(t, rec, 422, "invalid_guard")
		if p["field"] != field {
			t.Errorf("%s: field = %v, want %s", body, p["field"], field)
		}
	}
	rec := a.do("POST", releasesPath, admin, `{"candidate_version": 2, "percent": 20, "guard": {"metric": "failure_rate", "max_degradation": 2, "extra": 1}}`)
	if p := problem(t, rec, 400, "invalid_field"); p["field"] != "guard.extra" {
		t.Errorf("unknown guard member: field = %v", p["field"])
	}
	if after := a.releaseCounts(); after != before {
		t.Fatalf("rows changed: %+v -> %+v", before, after)
	}
}

func TestRelease_withAGuard_showsItWithDefaultsAndPatchChangesItAlone(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.withVersions(2)
		rel := a.createRelease(`{"candidate_version": 2, "percent": 20, "steps": [{"percent": 50, "after": "1h"}],
			"guard": {"metric": "failure_rate", "max_degradation": 2, "action": "rollback"}}`)
		g, _ := rel["guard"].(map[string]any)
		if g == nil || g["state"] != "collecting" || g["min_samples"] != float64(200) || g["confidence"] != 0.95 ||
			g["gate_steps"] != true || g["action"] != "rollback" {
			t.Fatalf("guard = %v", rel["guard"])
		}
		id := rel["id"].(string)
		rec := a.do("PATCH", "/v1/releases/"+id, admin, `{"expected_revision": 1, "guard": {"metric": "score", "max_degradation": 0.05}}`)
		got := a.ok(rec, 200)
		conforms(t, "Release", rec.Body.Bytes())
		g, _ = got["guard"].(map[string]any)
		if g == nil || g["metric"] != "score" || got["revision"] != float64(2) || got["next_step_at"] == nil || got["percent"] != float64(20) {
			t.Fatalf("after PATCH guard: %v", got)
		}
		rec = a.do("PATCH", "/v1/releases/"+id, admin, `{"expected_revision": 2, "guard": null}`)
		if got = a.ok(rec, 200); got["guard"] != nil {
			t.Fatalf("guard after removing it: %v", got["guard"])
		}
		rec = a.do("PATCH", "/v1/releases/"+id, admin, `{"expected_revision": 3}`)
		if p := problem(t, rec, 400, "invalid_field"); p["field"] != "percent" {
			t.Fatalf("PATCH without percent or guard: %v", p)
		}
	})
}

// outcomesBody is a POST /v1/outcomes body: n outcomes of arm (version v)
// of which the first fail are failures, each scored.
func outcomesBody(id, arm string, v, n, fail int, reason string) string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(`{"agent": "support", "env": "prod", "release_id": %q, "arm": %q, "version": %d, "reason": %q,
			"success": %v, "score": 0.5, "at": %q}`, id, arm, v, reason, i >= fail, at(0))
	}
	return `{"items": [` + strings.Join(items, ",") + `]}`
}

func TestGetRelease_afterOutcomes_showsEachArmsFiguresAndTheGuardWatching(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.withVersions(2)
		rel := a.createRelease(`{"candidate_version": 2, "percent": 20, "guard": {"metric": "failure_rate", "max_degradation": 2}}`)
		id := rel["id"].(string)
		// Batches of at most 100 (a loaded SQLite run timed out a 400-item one).
		for _, b := range []string{outcomesBody(id, "baseline", 1, 100, 20, "bucket"), outcomesBody(id, "baseline", 1, 100, 0, "bucket"),
			outcomesBody(id, "baseline", 1, 100, 0, "bucket"), outcomesBody(id, "baseline", 1, 100, 0, "bucket"),
			outcomesBody(id, "candidate", 2, 100, 15, "bucket"), outcomesBody(id, "candidate", 2, 100, 0, "bucket"),
			outcomesBody(id, "candidate", 2, 50, 0, "bucket"), outcomesBody(id, "candidate", 2, 50, 50, "override")} { // overrides never count
			a.ok(a.do("POST", "/v1/outcomes", runtime, b), 200)
		}
		rec := a.do("GET", "/v1/releases/"+id, runtime, "")
		got := a.ok(rec, 200)
		conforms(t, "Release", rec.Body.Bytes())
		var body struct {
			Guard struct{ State string }
			Stats struct {
				Baseline, Candidate struct {
					N, Failures int64
					Rate        float64
					ScoreMean   *float64 `json:"score_mean"`
					Interval    [2]float64
				}
				Difference *struct{ Estimate, Lower, Upper float64 }
				ByToken    map[string]struct{ Baseline, Candidate struct{ N int64 } } `json:"by_token"`
			}
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		st := body.Stats
		if body.Guard.State != "watching" || st.Baseline.N != 400 || st.Baseline.Failures != 20 || st.Baseline.Rate != 5 ||
			st.Candidate.N != 250 || st.Candidate.Rate != 6 || st.Candidate.ScoreMean == nil || *st.Candidate.ScoreMean != 0.5 ||
			st.Candidate.Interval[0] >= 6 || st.Candidate.Interval[1] <= 6 || st.Difference == nil || st.Difference.Estimate != 1 ||
			st.ByToken["agent"].Candidate.N != 250 {
			t.Fatalf("release = %v", got)
		}
	})
}

// must-show 3 over HTTP: with gate_steps a due step waits while an arm
// lacks min_samples bucket outcomes, and is applied once both have them.
func TestReleaseStep_withGateSteps_waitsForMinSamplesReportedOverHTTP(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.withVersions(2)
		rel := a.createRelease(`{"candidate_version": 2, "percent": 20, "steps": [{"percent": 50, "after": "1s"}],
			"guard": {"metric": "failure_rate", "max_degradation": 2, "min_samples": 10}}`)
		id := rel["id"].(string)
		time.Sleep(1100 * time.Millisecond) // the step is due
		a.ok(a.do("POST", "/v1/outcomes", runtime, outcomesBody(id, "baseline", 1, 10, 0, "bucket")), 200)
		a.ok(a.do("POST", "/v1/outcomes", runtime, outcomesBody(id, "candidate", 2, 9, 0, "bucket")), 200)
		if n, err := a.releases.RunDueSteps(t.Context()); n != 0 || err != nil {
			t.Fatalf("RunDueSteps with 9 candidate outcomes = %d, %v; want the step held", n, err)
		}
		if got := a.ok(a.do("GET", "/v1/releases/"+id, admin, ""), 200); got["percent"] != float64(20) || got["steps_applied"] != float64(0) {
			t.Fatalf("held step applied: %v", got)
		}
		a.ok(a.do("POST", "/v1/outcomes", runtime, outcomesBody(id, "candidate", 2, 1, 0, "bucket")), 200)
		if n, err := a.releases.RunDueSteps(t.Context()); n != 1 || err != nil {
			t.Fatalf("RunDueSteps with 10 outcomes an arm = %d, %v; want the step applied", n, err)
		}
		if got := a.ok(a.do("GET", "/v1/releases/"+id, admin, ""), 200); got["percent"] != float64(50) || got["steps_applied"] != float64(1) {
			t.Fatalf("step not applied: %v", got)
		}
	})
}
