package api_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestImport_partial_chainsItemsAndReportsConflicts(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.createVersion("billing", 0, "b1")
		body := `{"mode": "partial", "items": [
			{"agent": "support", "base_version": 0, "config": {"system": "s1"}, "message": "one"},
			{"agent": "support", "base_version": 1, "config": {"system": "s2"}},
			{"agent": "support", "base_version": 2, "config": {"system": "s3"}},
			{"agent": "billing", "base_version": 0, "config": {"system": "stale"}},
			{"agent": "billing", "base_version": 1, "config": {"system": "{{undeclared}}"}}]}`
		before := a.counts()
		rec := a.do("POST", "/v1/import", admin, body)
		res := a.ok(rec, 200)
		conforms(t, "ImportResult", rec.Body.Bytes())
		var out struct {
			Results []struct {
				Agent, Status string
				Version       *int
				LatestVersion *int `json:"latest_version"`
				Error         *struct{ Code, Variable string }
			}
			Summary struct{ Created, Conflict, Invalid int }
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		for i, want := range []int{1, 2, 3} {
			if r := out.Results[i]; r.Status != "created" || r.Version == nil || *r.Version != want {
				t.Errorf("item %d = %+v", i, r)
			}
		}
		if r := out.Results[3]; r.Status != "conflict" || r.LatestVersion == nil || *r.LatestVersion != 1 {
			t.Errorf("conflict item = %+v", r)
		}
		if r := out.Results[4]; r.Status != "invalid" || r.Error == nil || r.Error.Code != "undeclared_variable" || r.Error.Variable != "undeclared" {
			t.Errorf("invalid item = %+v", r)
		}
		if out.Summary.Created != 3 || out.Summary.Conflict != 1 || out.Summary.Invalid != 1 ||
			!strings.HasPrefix(res["batch_fingerprint"].(string), "sha256:") {
			t.Errorf("summary = %+v", res)
		}
		after := a.counts()
		if after.versions != before.versions+3 || after.audit != before.audit+4 {
			t.Errorf("rows: %+v -> %+v (3 versions, 3 version.created + 1 import.applied)", before, after)
		}
		// Read from SQL (the list): GET of one version may come from the
		// snapshot cache, which Import fills without created_by/created_at
		// (reported to promptstore's owner).
		rec = a.do("GET", "/v1/agents/support/versions?limit=1", runtime, "")
		conforms(t, "VersionList", rec.Body.Bytes())
		v := a.ok(rec, 200)["items"].([]any)[0].(map[string]any)
		if v["config"].(map[string]any)["system"] != "s3" || v["created_by"] != "ops" || !millis.MatchString(v["created_at"].(string)) {
			t.Errorf("v3 = %v", v)
		}
	})
}

func TestImport_allOrNothing_withAConflict_writesNothing(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.createVersion("billing", 0, "b1")
		before := a.counts()
		rec := a.do("POST", "/v1/import", admin, `{"mode": "all_or_nothing", "items": [
			{"agent": "support", "base_version": 0, "config": {"system": "s1"}},
			{"agent": "billing", "base_version": 0, "config": {"system": "stale"}}]}`)
		p := problem(t, rec, 409, "import_rejected")
		conforms(t, "Problem", rec.Body.Bytes())
		summary := p["summary"].(map[string]any)
		results := p["results"].([]any)
		if summary["conflict"] != float64(1) || summary["created"] != float64(0) || len(results) != 2 ||
			results[0].(map[string]any)["status"] != "not_applied" || results[1].(map[string]any)["latest_version"] != float64(1) {
			t.Errorf("problem = %v", p)
		}
		if after := a.counts(); after != before {
			t.Errorf("rows changed: %+v -> %+v", before, after)
		}
		problem(t, a.do("GET", "/v1/agents/support/versions", runtime, ""), 404, "agent_not_found")
	})
}

func TestImport_badItems_areRejectedWithTheirPlace(t *testing.T) {
	a := sqliteApp(t)
	for _, tc := range []struct{ body, code, field string }{
		{`{"mode": "partial"}`, "invalid_field", "items"},
		{`{"items": []}`, "invalid_field", "mode"},
		{`{"mode": "some", "items": [{"agent": "a", "base_version": 0, "config": {"system": "x"}}]}`, "invalid_field", "mode"},
		{`{"mode": "partial", "items": []}`, "invalid_field", "items"},
		{`{"mode": "partial", "items": [1]}`, "invalid_field", "items[0]"},
		{`{"mode": "partial", "items": [{"agent": "a", "config": {"system": "x"}}]}`, "invalid_field", "items[0].base_version"},
		{`{"mode": "partial", "items": [{"agent": "a", "base_version": "0", "config": {"system": "x"}}]}`, "invalid_field", "items[0].base_version"},
		{`{"mode": "partial", "items": [{"agent": "a", "base_version": 0, "config": "x"}]}`, "invalid_field", "items[0].config"},
		{`{"mode": "partial", "items": [{"agent": "a", "base_version": 0, "config": {"system": "x"}, "extra": 1}]}`, "invalid_field", "items[0].extra"},
	} {
		p := problem(t, a.do("POST", "/v1/import", admin, tc.body), 400, tc.code)
		if p["field"] != tc.field {
			t.Errorf("%s: field = %v, want %s", tc.body, p["field"], tc.field)
		}
	}
	var many strings.Builder
	many.WriteString(`{"mode": "partial", "items": [`)
	for i := range 10001 {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(&many, `{"agent": "a%d", "base_version": 0, "config": {"system": "x"}}`, i)
	}
	many.WriteString("]}")
	problem(t, a.do("POST", "/v1/import", admin, many.String()), 400, "invalid_field")
}

func TestImport_hasItsOwnBodyLimit(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		// A 2 MiB body of configs under 1 MiB each: the import's own limit.
		half := strings.Repeat("x", 700<<10)
		big := `{"mode": "partial", "items": [{"agent": "a", "base_version": 0, "config": {"system": "` + half + `"}},
			{"agent": "b", "base_version": 0, "config": {"system": "` + half + `"}}, {"agent": "c", "base_version": 0, "config": {"system": "` + half + `"}}]}`
		a.ok(a.do("POST", "/v1/import", admin, big), 200)
		problem(t, a.do("POST", "/v1/agents/a/versions", admin, big), 413, "body_too_large")
		// One config over 1 MiB is refused however it comes (an import used to
		// store a 54 MiB config, which then made every full bundle 422).
		huge := `{"mode": "partial", "items": [{"agent": "d", "base_version": 0, "config": {"system": "` + strings.Repeat("x", 2<<20) + `"}}]}`
		rec := a.do("POST", "/v1/import", admin, huge)
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"status":"invalid"`) || !strings.Contains(rec.Body.String(), "config is larger than 1048576 bytes") {
			t.Fatalf("import of a 2 MiB config = %d %.300s; want the item invalid", rec.Code, rec.Body)
		}
		problem(t, a.do("GET", "/v1/agents/d/versions", admin, ""), 404, "agent_not_found")

		small := sqliteApp(t, func(c *apiConfig) { c.ImportMaxBytes = 1024 })
		p := problem(t, small.do("POST", "/v1/import", admin, big), 413, "body_too_large")
		if p["limit"] != float64(1024) {
			t.Errorf("limit = %v", p["limit"])
		}
	})
}
