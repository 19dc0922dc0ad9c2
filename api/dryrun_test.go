package api_test

import (
	"testing"
)

// TestCreateVersion_dryRunWithUndeclaredVariable_answersTheCreatesProblemAndWritesNothing:
// ?dry_run=true runs a create's checks: the same 422 undeclared_variable
// (field, variable) and not one row written; the control without dry_run
// gives the same problem, and a valid config is written by it.
func TestCreateVersion_dryRunWithUndeclaredVariable_answersTheCreatesProblemAndWritesNothing(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		const path = "/v1/agents/support/versions"
		bad := `{"base_version": 0, "config": {"system": "Hi {{who}}"}}`
		before := a.counts()
		for _, q := range []string{"?dry_run=true", ""} {
			p := problem(t, a.do("POST", path+q, admin, bad), 422, "undeclared_variable")
			if p["variable"] != "who" || p["field"] != "config.system" {
				t.Fatalf("%s: problem %v", q, p)
			}
		}
		if after := a.counts(); after != before {
			t.Fatalf("an invalid create wrote: %+v -> %+v", before, after)
		}

		good := `{"base_version": 0, "config": {"system": "Hi {{who}}", "variables": {"who": {"default": "you"}}}, "message": "m"}`
		v := a.ok(a.do("POST", path+"?dry_run=true", admin, good, "Idempotency-Key", "k1"), 200)
		if v["version"] != float64(1) || v["dry_run"] != true || v["message"] != "m" || v["content_hash"] == "" {
			t.Fatalf("dry run answer %v", v)
		}
		if after := a.counts(); after != before {
			t.Fatalf("a dry run wrote: %+v -> %+v", before, after)
		}
		problem(t, a.do("GET", path+"/1", admin, ""), 404, "agent_not_found")

		// The control: the same body and Idempotency-Key without dry_run
		// creates (the dry run recorded nothing under the key).
		created := a.ok(a.do("POST", path, admin, good, "Idempotency-Key", "k1"), 201)
		if created["content_hash"] != v["content_hash"] || created["version"] != float64(1) {
			t.Fatalf("create %v, dry run said %v", created, v)
		}
		if a.counts().versions != before.versions+1 {
			t.Fatalf("the create did not write")
		}

		// A stale base is the create's 409, with latest_version.
		p := problem(t, a.do("POST", path+"?dry_run=true", admin, good), 409, "version_conflict")
		if p["latest_version"] != float64(1) {
			t.Fatalf("conflict %v", p)
		}
		problem(t, a.do("POST", path+"?dry_run=yes", admin, good), 400, "invalid_field")
		problem(t, a.do("POST", path+"?dry_run=true", runtime, good), 403, "forbidden")
	})
}
