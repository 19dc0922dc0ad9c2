package api_test

import (
	"fmt"
	"testing"
)

func TestAudit_listsEventsOldestFirst_namingTheTokens(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.createVersion("support", 0, "one")
		a.createVersion("billing", 0, "b")
		a.publish("support", "prod", 1, 0)

		rec := a.do("GET", "/v1/audit?limit=2", admin, "")
		page := a.ok(rec, 200)
		conforms(t, "AuditList", rec.Body.Bytes())
		items := page["items"].([]any)
		e0 := items[0].(map[string]any)
		if len(items) != 2 || e0["action"] != "version.created" || e0["actor"] != "ops" || e0["instance"] != "test-1" ||
			e0["resource"] != "agents/support/versions/1" || e0["details"].(map[string]any)["version"] != float64(1) ||
			!millis.MatchString(e0["at"].(string)) {
			t.Fatalf("page 1 = %v", page)
		}
		next := page["next"].(string)
		if next != fmt.Sprint(items[1].(map[string]any)["id"]) {
			t.Fatalf("next = %v", next)
		}
		page = a.ok(a.do("GET", "/v1/audit?since="+next, admin, ""), 200)
		if items := page["items"].([]any); len(items) != 1 || items[0].(map[string]any)["action"] != "pointer.switched" || page["next"] != nil {
			t.Fatalf("page 2 = %v", page)
		}
		// cursor is an alias of since.
		if page := a.ok(a.do("GET", "/v1/audit?cursor="+next, admin, ""), 200); len(page["items"].([]any)) != 1 {
			t.Fatalf("cursor page = %v", page)
		}
		// Filters.
		page = a.ok(a.do("GET", "/v1/audit?agent=support&action=version.created", admin, ""), 200)
		if items := page["items"].([]any); len(items) != 1 {
			t.Fatalf("filtered = %v", page)
		}
		page = a.ok(a.do("GET", "/v1/audit?agent=support&env=prod", admin, ""), 200)
		if items := page["items"].([]any); len(items) != 1 || items[0].(map[string]any)["action"] != "pointer.switched" {
			t.Fatalf("env filter = %v", page)
		}
	})
}
