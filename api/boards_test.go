package api_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"
)

func TestBoards_recordLifecycle_overHTTP(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		problem(t, a.do("GET", "/v1/boards/tasks/records", runtime, ""), 404, "board_not_found")
		rec := a.do("POST", "/v1/boards/tasks/records", runtime, `{"id": "t1", "payload": {"url": "https://example.com"}, "priority": 5, "dedupe_key": "msg-1"}`)
		r := a.ok(rec, 201)
		conforms(t, "Record", rec.Body.Bytes())
		if r["state"] != "pending" || r["revision"] != float64(1) || r["owner"] != nil || r["dedupe_key"] != "msg-1" {
			t.Fatalf("created = %v", r)
		}
		// The same dedupe_key: 200 with that record.
		if again := a.ok(a.do("POST", "/v1/boards/tasks/records", runtime, `{"payload": 2, "dedupe_key": "msg-1"}`), 200); again["id"] != "t1" {
			t.Fatalf("dedupe = %v", again)
		}
		b := a.ok(a.do("GET", "/v1/boards/tasks", runtime, ""), 200)
		if b["revision"] != float64(1) || b["initial"] != "pending" {
			t.Fatalf("default board = %v", b)
		}
		// Claim with an Idempotency-Key: a replay answers the same claim.
		rec = a.do("POST", "/v1/boards/tasks/claim", runtime, `{"holder": "w1", "ttl_ms": 60000}`, "Idempotency-Key", "c-1")
		c := a.ok(rec, 200)
		conforms(t, "Claim", rec.Body.Bytes())
		fence := int64(c["fence"].(float64))
		replay := a.do("POST", "/v1/boards/tasks/claim", runtime, `{"holder": "w1", "ttl_ms": 60000}`, "Idempotency-Key", "c-1")
		if replay.Code != 200 || replay.Header().Get("Idempotent-Replayed") != "true" || replay.Body.String() != rec.Body.String() {
			t.Fatalf("replay = %d %s", replay.Code, replay.Body)
		}
		// Nothing left: 204, never stored for its key.
		if rec := a.do("POST", "/v1/boards/tasks/claim", runtime, `{"holder": "w2"}`, "Idempotency-Key", "c-2"); rec.Code != 204 {
			t.Fatalf("empty claim = %d %s", rec.Code, rec.Body)
		}
		a.ok(a.do("POST", "/v1/boards/tasks/records", runtime, `{"id": "t2", "payload": {}}`), 201)
		if rec := a.do("POST", "/v1/boards/tasks/claim", runtime, `{"holder": "w2"}`, "Idempotency-Key", "c-2"); rec.Code != 200 {
			t.Fatalf("claim after a 204 with the same key = %d %s", rec.Code, rec.Body)
		}
		// The write rule.
		p := problem(t, a.do("PATCH", "/v1/boards/tasks/records/t1", runtime, `{"expected_revision": 2, "state": "running"}`), 423, "claimed")
		if p["owner"] != "w1" || p["claim_expires_at"] == nil {
			t.Fatalf("claimed = %v", p)
		}
		p = problem(t, a.do("PATCH", "/v1/boards/tasks/records/t1", runtime, fmt.Sprintf(`{"expected_revision": 2, "state": "running", "fence": %d}`, fence+5)), 409, "stale_fence")
		if p["current_fence"] != float64(fence) {
			t.Fatalf("stale = %v", p)
		}
		p = problem(t, a.do("PATCH", "/v1/boards/tasks/records/t1", runtime, fmt.Sprintf(`{"expected_revision": 2, "state": "done", "fence": %d}`, fence)), 409, "invalid_transition")
		if p["state"] != "claimed" {
			t.Fatalf("invalid = %v", p)
		}
		problem(t, a.do("PATCH", "/v1/boards/tasks/records/t1", runtime, fmt.Sprintf(`{"state": "running", "fence": %d}`, fence), "If-Match", `"1"`), 412, "precondition_failed")
		rec = a.do("PATCH", "/v1/boards/tasks/records/t1", runtime, fmt.Sprintf(`{"expected_revision": 2, "state": "running", "fence": %d}`, fence))
		if a.ok(rec, 200)["state"] != "running" || rec.Header().Get("ETag") != `"3"` {
			t.Fatalf("running = %s %v", rec.Body, rec.Header())
		}
		rec = a.do("POST", "/v1/boards/tasks/records/t1/heartbeat", runtime, fmt.Sprintf(`{"fence": %d, "ttl_ms": 20000}`, fence))
		if hb := a.ok(rec, 200); hb["revision"] != float64(3) || hb["claim_ttl_ms"] != float64(20000) {
			t.Fatalf("heartbeat = %v", hb)
		}
		conforms(t, "Heartbeat", rec.Body.Bytes())
		done := a.ok(a.do("PATCH", "/v1/boards/tasks/records/t1", runtime, fmt.Sprintf(`{"expected_revision": 3, "state": "done", "payload": {"ok": true}, "fence": %d}`, fence)), 200)
		if done["owner"] != nil || done["claim_expires_at"] != nil || done["state"] != "done" {
			t.Fatalf("done = %v", done)
		}
		problem(t, a.do("PATCH", "/v1/boards/tasks/records/t1", runtime, `{"expected_revision": 4, "payload": 1}`), 409, "invalid_transition")
		// Release t2 and list by state.
		t2 := a.ok(a.do("GET", "/v1/boards/tasks/records/t2", runtime, ""), 200)
		rel := a.ok(a.do("POST", "/v1/boards/tasks/records/t2/release", runtime, fmt.Sprintf(`{"fence": %d}`, int64(t2["fence"].(float64)))), 200)
		if rel["state"] != "pending" || rel["owner"] != nil {
			t.Fatalf("released = %v", rel)
		}
		rec = a.do("GET", "/v1/boards/tasks/records?state=pending&limit=10", runtime, "")
		l := a.ok(rec, 200)
		conforms(t, "RecordList", rec.Body.Bytes())
		if items := l["items"].([]any); len(items) != 1 || items[0].(map[string]any)["id"] != "t2" {
			t.Fatalf("list = %v", l)
		}
		problem(t, a.do("GET", "/v1/boards/tasks/records/nope", runtime, ""), 404, "record_not_found")
		problem(t, a.do("POST", "/v1/boards/tasks/records/t1/claim", runtime, `{"holder": "w3"}`), 409, "invalid_transition")
		problem(t, a.do("POST", "/v1/boards/tasks/claim", runtime, `{"holder": "w3", "wait_ms": 40000}`), 400, "invalid_field")
		problem(t, a.do("POST", "/v1/boards/tasks/claim", runtime, `{"holder": ""}`), 400, "invalid_id")
	})
}

func TestBoards_defineAndQuota_overHTTP(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		def := `{"states": ["todo", "doing", "done", "dropped"], "initial": "todo",
			"transitions": {"todo": ["doing", "dropped"], "doing": ["done", "todo"]},
			"claim": {"from": "todo", "to": "doing", "ttl_ms": 5000, "exhausted": "dropped"},
			"terminal": ["done", "dropped"], "quota": {"claims_per_minute": 2}`
		problem(t, a.do("PUT", "/v1/boards/q", runtime, def+`, "expected_revision": 0}`), 403, "forbidden")
		problem(t, a.do("PUT", "/v1/boards/q", admin, `{"states": ["a"], "initial": "b", "claim": {"from": "a", "to": "a", "exhausted": "a"}, "expected_revision": 0}`), 400, "invalid_field")
		rec := a.do("PUT", "/v1/boards/q", admin, def+`, "expected_revision": 0}`)
		if b := a.ok(rec, 201); b["revision"] != float64(1) {
			t.Fatalf("defined = %v", b)
		}
		conforms(t, "Board", rec.Body.Bytes())
		for i := 0; i < 4; i++ {
			a.ok(a.do("POST", "/v1/boards/q/records", runtime, fmt.Sprintf(`{"id": "r%d", "payload": null}`, i)), 201)
		}
		if sec := time.Now().Second(); sec > 55 {
			time.Sleep(time.Duration(61-sec) * time.Second)
		}
		a.ok(a.do("POST", "/v1/boards/q/claim", runtime, `{"holder": "w"}`), 200)
		a.ok(a.do("POST", "/v1/boards/q/claim", runtime, `{"holder": "w"}`), 200)
		rec = a.do("POST", "/v1/boards/q/claim", runtime, `{"holder": "w"}`)
		problem(t, rec, 429, "quota_exceeded")
		if n, err := strconv.Atoi(rec.Header().Get("Retry-After")); err != nil || n < 1 || n > 60 {
			t.Fatalf("Retry-After = %q", rec.Header().Get("Retry-After"))
		}
		// Removing a state records are in.
		p := problem(t, a.do("PUT", "/v1/boards/q", admin, `{"states": ["todo", "busy", "done"], "initial": "todo",
			"transitions": {"todo": ["busy"], "busy": ["done", "todo"]}, "claim": {"from": "todo", "to": "busy", "exhausted": "done"},
			"terminal": ["done"], "expected_revision": 1}`), 409, "board_in_use")
		if fmt.Sprint(p["states"]) != "[doing]" {
			t.Fatalf("in use = %v", p)
		}
		problem(t, a.do("PUT", "/v1/boards/q", admin, def+`, "expected_revision": 7}`), 409, "revision_conflict")
	})
}
