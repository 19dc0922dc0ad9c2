package api_test

import (
	"fmt"
	"strings"
	"testing"
)

func TestBoards_delete_byItsCreatorOrAnAdmin_onlyWhenEveryRecordIsClosed(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		other := a.createToken(`{"name": "other", "role": "runtime"}`)
		a.ok(a.do("POST", "/v1/boards/tasks/records", runtime, `{"id": "r1", "payload": {}}`), 201)
		rec := a.do("GET", "/v1/boards/tasks", runtime, "")
		if b := a.ok(rec, 200); b["created_by"] != "agent" {
			t.Fatalf("board = %v, want created_by agent", b)
		}
		conforms(t, "Board", rec.Body.Bytes())
		if l := a.ok(a.do("GET", "/v1/boards", runtime, ""), 200); l["items"].([]any)[0].(map[string]any)["created_by"] != "agent" {
			t.Fatalf("list = %v, want created_by agent", l)
		}
		if p := problem(t, a.do("DELETE", "/v1/boards/tasks", other, ""), 403, "forbidden"); p["created_by"] != "agent" {
			t.Fatalf("delete by another token = %v", p)
		}
		if p := problem(t, a.do("DELETE", "/v1/boards/tasks", runtime, ""), 409, "board_in_use"); p["open_records"] != float64(1) {
			t.Fatalf("delete with a pending record = %v", p)
		}
		a.ok(a.do("PATCH", "/v1/boards/tasks/records/r1", runtime, `{"expected_revision": 1, "state": "cancelled"}`), 200)
		if rec := a.do("DELETE", "/v1/boards/tasks", runtime, ""); rec.Code != 204 {
			t.Fatalf("delete by its creator = %d %s", rec.Code, rec.Body)
		}
		problem(t, a.do("GET", "/v1/boards/tasks", runtime, ""), 404, "board_not_found")
		problem(t, a.do("GET", "/v1/boards/tasks/records/r1", runtime, ""), 404, "board_not_found")
		problem(t, a.do("DELETE", "/v1/boards/tasks", runtime, ""), 404, "board_not_found")
		var events int64
		if err := a.db.Raw(`SELECT COUNT(*) FROM audit_events WHERE action = 'board.deleted' AND board = 'tasks'`).Scan(&events).Error; err != nil || events != 1 {
			t.Fatalf("board.deleted events = %d, %v", events, err)
		}
		// an admin token deletes any token's board; the name is free again
		a.ok(a.do("POST", "/v1/boards/tasks/records", other, `{"id": "r1", "payload": {}}`), 201)
		a.ok(a.do("PATCH", "/v1/boards/tasks/records/r1", other, `{"expected_revision": 1, "state": "cancelled"}`), 200)
		if rec := a.do("DELETE", "/v1/boards/tasks", admin, ""); rec.Code != 204 {
			t.Fatalf("delete by an admin = %d %s", rec.Code, rec.Body)
		}
	})
}

func TestBoards_perTokenLimit_leavesTheOtherTokensTheirBoards(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		const perToken = 100 // PROMPTD_BOARD_MAX_PER_TOKEN's default
		other := a.createToken(`{"name": "other", "role": "runtime"}`)
		for i := 0; i < perToken; i++ {
			a.ok(a.do("POST", fmt.Sprintf("/v1/boards/b%03d/records", i), runtime, `{"id": "r", "payload": {}}`), 201)
		}
		rec := a.do("POST", "/v1/boards/one-more/records", runtime, `{"payload": {}}`)
		p := problem(t, rec, 422, "limit_exceeded")
		if p["field"] != "boards_per_token" || p["limit"] != float64(perToken) || rec.Header().Get("Retry-After") != "" ||
			strings.Contains(p["detail"].(string), "retry") {
			t.Fatalf("board %d of one token = %v %v", perToken+1, p, rec.Header())
		}
		problem(t, a.do("GET", "/v1/boards/one-more", runtime, ""), 404, "board_not_found") // nothing was written
		a.ok(a.do("POST", "/v1/boards/theirs/records", other, `{"payload": {}}`), 201)
		// control: the limit is the count, which a deletion lowers
		a.ok(a.do("PATCH", "/v1/boards/b000/records/r", runtime, `{"expected_revision": 1, "state": "cancelled"}`), 200)
		if rec := a.do("DELETE", "/v1/boards/b000", runtime, ""); rec.Code != 204 {
			t.Fatalf("delete = %d %s", rec.Code, rec.Body)
		}
		a.ok(a.do("POST", "/v1/boards/one-more/records", runtime, `{"payload": {}}`), 201)
	})
}
