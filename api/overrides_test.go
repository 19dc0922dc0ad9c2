package api_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// ids returns n ids prefix0..prefix{n-1} as a JSON array.
func ids(prefix string, n int) string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%q", fmt.Sprintf("%s%d", prefix, i))
	}
	return "[" + strings.Join(out, ",") + "]"
}

// resolveArm resolves user over HTTP and returns the arm, its reason and
// the version served.
func (a *app) resolveArm(user string) (arm, reason string, version int) {
	a.t.Helper()
	p := a.ok(a.do("GET", prodPath+"/prompt?user_id="+user, runtime, ""), 200)
	tr := p["release"].(map[string]any)
	return tr["arm"].(string), tr["reason"].(string), int(p["version"].(float64))
}

func TestReleaseOverrides_at0And100Percent_keepListedUsersOnTheirForcedArm(t *testing.T) {
	a := sqliteApp(t)
	a.withVersions(2)
	rel := a.createRelease(`{"candidate_version": 2, "percent": 0, "steps": [{"percent": 10, "after": "1h"}],
		"overrides": {"candidate": ` + ids("c", 100) + `, "baseline": ` + ids("b", 100) + `}}`)
	id := rel["id"].(string)
	if o := rel["overrides"].(map[string]any); len(o["candidate"].([]any)) != 100 || len(o["baseline"].([]any)) != 100 {
		t.Fatalf("overrides = %v", o)
	}
	check := func(percent string) {
		t.Helper()
		for i := range 100 {
			if arm, reason, v := a.resolveArm(fmt.Sprintf("c%d", i)); arm != "candidate" || reason != "override" || v != 2 {
				t.Fatalf("at %s%% c%d got %s (%s) v%d", percent, i, arm, reason, v)
			}
			if arm, reason, v := a.resolveArm(fmt.Sprintf("b%d", i)); arm != "baseline" || reason != "override" || v != 1 {
				t.Fatalf("at %s%% b%d got %s (%s) v%d", percent, i, arm, reason, v)
			}
		}
	}
	check("0")
	if arm, reason, _ := a.resolveArm("someone-else"); arm != "baseline" || reason != "bucket" {
		t.Fatalf("at 0%% an unlisted user got %s (%s)", arm, reason)
	}
	a.ok(a.do("PATCH", "/v1/releases/"+id, admin, `{"percent": 100, "expected_revision": 1}`), 200)
	check("100")
	if arm, reason, _ := a.resolveArm("someone-else"); arm != "candidate" || reason != "bucket" {
		t.Fatalf("at 100%% an unlisted user got %s (%s)", arm, reason)
	}
}

func TestReleaseOverrides_patchAlone_replacesListsKeepsStepsAndNeverLeaksIDs(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.withVersions(2)
		rel := a.createRelease(`{"candidate_version": 2, "percent": 0, "steps": [{"percent": 10, "after": "1h"}],
			"overrides": {"candidate": ["secret-user@example.com"]}}`)
		id := rel["id"].(string)
		if arm, reason, _ := a.resolveArm("secret-user@example.com"); arm != "candidate" || reason != "override" {
			t.Fatalf("listed user got %s (%s)", arm, reason)
		}
		rec := a.do("PATCH", "/v1/releases/"+id, admin, `{"overrides": {"candidate": [], "baseline": ["other-user@example.com"]}, "expected_revision": 1}`)
		got := a.ok(rec, 200)
		conforms(t, "Release", rec.Body.Bytes())
		if got["revision"] != float64(2) || got["next_step_at"] == nil || got["percent"] != float64(0) {
			t.Fatalf("after PATCH overrides = %v", got)
		}
		o := got["overrides"].(map[string]any)
		if len(o["candidate"].([]any)) != 0 || o["baseline"].([]any)[0] != hashOf(id, "other-user@example.com") {
			t.Fatalf("overrides = %v", o)
		}
		if arm, reason, _ := a.resolveArm("secret-user@example.com"); arm != "baseline" || reason != "bucket" {
			t.Fatalf("unlisted user got %s (%s)", arm, reason)
		}
		// Stale revision: 409, nothing changes.
		problem(t, a.do("PATCH", "/v1/releases/"+id, admin, `{"overrides": {"candidate": ["x"]}, "expected_revision": 1}`), 409, "revision_conflict")

		// Neither the audit log nor the feed carries an id or its hash.
		var details []string
		a.db.Raw(`SELECT details FROM audit_events`).Scan(&details)
		all := strings.Join(details, "\n")
		for _, leak := range []string{"example.com", hashOf(id, "other-user@example.com"), hashOf(id, "secret-user@example.com")} {
			if strings.Contains(all, leak) {
				t.Fatalf("audit details carry %q: %s", leak, all)
			}
		}
		evs, _ := a.pollUntil("&actions=release.*", runtime, "0", 2)
		if len(evs) != 2 || evs[1]["action"] != "release.percent_changed" {
			t.Fatalf("events = %v", actions(evs))
		}
		b, _ := json.Marshal(evs)
		if strings.Contains(string(b), "example.com") || !strings.Contains(string(b), `"overrides":{"baseline":1,"candidate":0}`) {
			t.Fatalf("events = %s", b)
		}
	})
}

func TestReleaseOverrides_whenInvalid_are4xxAndWriteNothing(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.withVersions(2)
		before := a.releaseCounts()
		p := problem(t, a.do("POST", releasesPath, admin, `{"candidate_version": 2, "percent": 5,
			"overrides": {"candidate": ["u1", "u2"], "baseline": ["u3", "u2"]}}`), 422, "invalid_overrides")
		if p["field"] != "overrides.baseline[1]" {
			t.Fatalf("problem = %v", p)
		}
		p = problem(t, a.do("POST", releasesPath, admin, `{"candidate_version": 2, "percent": 5,
			"overrides": {"candidate": `+ids("u", 1001)+`}}`), 422, "invalid_overrides")
		if p["field"] != "overrides.candidate" {
			t.Fatalf("problem = %v", p)
		}
		p = problem(t, a.do("POST", releasesPath, admin, `{"candidate_version": 2, "percent": 5,
			"overrides": {"baseline": ["ok", "bad\u0007bell"]}}`), 400, "invalid_id")
		if p["field"] != "overrides.baseline[1]" {
			t.Fatalf("problem = %v", p)
		}
		problem(t, a.do("POST", releasesPath, admin, `{"candidate_version": 2, "percent": 5, "overrides": {"candidate": "u1"}}`), 400, "invalid_field")
		if after := a.releaseCounts(); after != before {
			t.Fatalf("rows changed: %+v -> %+v", before, after)
		}
		rel := a.createRelease(`{"candidate_version": 2, "percent": 5}`)
		id := rel["id"].(string)
		before = a.releaseCounts()
		problem(t, a.do("PATCH", "/v1/releases/"+id, admin, `{"expected_revision": 1}`), 400, "invalid_field")
		problem(t, a.do("PATCH", "/v1/releases/"+id, admin, `{"overrides": {"candidate": ["a"], "baseline": ["a"]}, "expected_revision": 1}`),
			422, "invalid_overrides")
		if after := a.releaseCounts(); after != before {
			t.Fatalf("rows changed: %+v -> %+v", before, after)
		}
	})
}
