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

func TestAudit_orderDesc_listsNewestFirst_andPagesBackwards(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.createVersion("support", 0, "one")
		a.createVersion("billing", 0, "b")
		a.publish("support", "prod", 1, 0)

		rec := a.do("GET", "/v1/audit?order=desc&limit=2", admin, "")
		page := a.ok(rec, 200)
		conforms(t, "AuditList", rec.Body.Bytes())
		items := page["items"].([]any)
		if len(items) != 2 || items[0].(map[string]any)["action"] != "pointer.switched" ||
			items[1].(map[string]any)["resource"] != "agents/billing/versions/1" {
			t.Fatalf("newest page = %v", page)
		}
		next := page["next"].(string)
		if next != fmt.Sprint(items[1].(map[string]any)["id"]) {
			t.Fatalf("next = %v", next)
		}
		// The next page is the events before next, still newest first.
		page = a.ok(a.do("GET", "/v1/audit?order=desc&since="+next, admin, ""), 200)
		if items := page["items"].([]any); len(items) != 1 || items[0].(map[string]any)["resource"] != "agents/support/versions/1" ||
			page["next"] != nil {
			t.Fatalf("older page = %v", page)
		}
		// Filters apply as oldest first; order=asc is the default.
		page = a.ok(a.do("GET", "/v1/audit?order=desc&action=version.created", admin, ""), 200)
		if items := page["items"].([]any); len(items) != 2 || items[0].(map[string]any)["resource"] != "agents/billing/versions/1" {
			t.Fatalf("filtered = %v", page)
		}
		page = a.ok(a.do("GET", "/v1/audit?order=asc&limit=1", admin, ""), 200)
		if items := page["items"].([]any); len(items) != 1 || items[0].(map[string]any)["resource"] != "agents/support/versions/1" {
			t.Fatalf("asc = %v", page)
		}
		problem(t, a.do("GET", "/v1/audit?order=newest", admin, ""), 400, "invalid_field")
	})
}
