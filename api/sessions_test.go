package api_test

import (
	"fmt"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/promptd/promptd/internal/harness/testenv"
)

// forEachLocker runs f over the in-memory locker (SQLite), and over Redis
// on every SQL dialect.
func forEachLocker(t *testing.T, f func(t *testing.T, a *app)) {
	t.Run("memory", func(t *testing.T) { f(t, sqliteApp(t)) })
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		t.Run("redis", func(t *testing.T) { f(t, redisApp(t, db)) })
	})
}

// createSession creates a session of support/prod over HTTP.
func (a *app) createSession(id, user string) map[string]any {
	a.t.Helper()
	body := fmt.Sprintf(`{"session_id": %q, "agent": "support", "env": "prod"`, id)
	if user != "" {
		body += fmt.Sprintf(`, "user_id": %q`, user)
	}
	rec := a.do("POST", "/v1/sessions", runtime, body+"}")
	s := a.ok(rec, 201)
	conforms(a.t, "Session", rec.Body.Bytes())
	return s
}

func num(v any) int64 { return int64(v.(float64)) }

func TestSession_lifecycle_overHTTP(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.withVersions(2)
		s := a.createSession("s1", "u1")
		if s["revision"] != float64(0) || s["pinned_version"] != float64(1) || s["state"] != "open" || s["lease"] != nil ||
			s["user_id"] != "u1" || !millis.MatchString(s["created_at"].(string)) {
			t.Fatalf("created = %v", s)
		}
		// The same id, agent, env and user: 200 with it; another user: 409.
		if again := a.ok(a.do("POST", "/v1/sessions", runtime, `{"session_id": "s1", "agent": "support", "env": "prod", "user_id": "u1"}`), 200); again["session_id"] != "s1" {
			t.Fatalf("again = %v", again)
		}
		problem(t, a.do("POST", "/v1/sessions", runtime, `{"session_id": "s1", "agent": "support", "env": "prod", "user_id": "u2"}`), 409, "session_exists")
		// A generated id.
		if gen := a.ok(a.do("POST", "/v1/sessions", runtime, `{"agent": "support", "env": "prod", "metadata": {"channel": "web"}}`), 201); gen["session_id"] == "" || gen["user_id"] != nil {
			t.Fatalf("generated = %v", gen)
		}

		// Turns: 201 {revision, seqs}.
		rec := a.do("POST", "/v1/sessions/s1/turns", runtime, `{"expected_revision": 0, "turns": [
			{"role": "user", "content": "where is my order?"},
			{"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "lookup_order", "arguments": "{}"}}]},
			{"role": "tool", "tool_call_id": "c1", "content": "shipped"}]}`)
		out := a.ok(rec, 201)
		conforms(t, "Appended", rec.Body.Bytes())
		if out["revision"] != float64(1) || fmt.Sprint(out["seqs"]) != "[1 2 3]" {
			t.Fatalf("appended = %v", out)
		}
		p := problem(t, a.do("POST", "/v1/sessions/s1/turns", runtime, `{"expected_revision": 0, "turns": [{"role": "user", "content": "x"}]}`), 409, "revision_conflict")
		if p["current_revision"] != float64(1) {
			t.Errorf("current_revision = %v", p["current_revision"])
		}
		problem(t, a.do("POST", "/v1/sessions/s1/turns", runtime, `{"turns": [{"role": "user", "content": "x"}]}`, "If-Match", `"0"`), 412, "precondition_failed")

		// A page of turns after since.
		rec = a.do("GET", "/v1/sessions/s1?since=1&limit=1", runtime, "")
		got := a.ok(rec, 200)
		conforms(t, "SessionDetail", rec.Body.Bytes())
		turns := got["turns"].([]any)
		if len(turns) != 1 || turns[0].(map[string]any)["seq"] != float64(2) || got["next_since"] != float64(2) || got["turn_count"] != float64(3) {
			t.Fatalf("page = %s", rec.Body)
		}
		if got := a.ok(a.do("GET", "/v1/sessions/s1?since=2", runtime, ""), 200); len(got["turns"].([]any)) != 1 || got["next_since"] != nil {
			t.Fatalf("last page = %v", got)
		}

		// State entries: compare-and-set per key.
		rec = a.do("PUT", "/v1/sessions/s1/state/plan", runtime, `{"value": {"step": 1}, "expected_revision": 0}`)
		if w := a.ok(rec, 200); w["key"] != "plan" || w["revision"] != float64(1) {
			t.Fatalf("state put = %v", w)
		}
		conforms(t, "StateWritten", rec.Body.Bytes())
		p = problem(t, a.do("PUT", "/v1/sessions/s1/state/plan", runtime, `{"value": 2, "expected_revision": 0}`), 409, "revision_conflict")
		if p["current_revision"] != float64(1) {
			t.Errorf("current_revision = %v", p["current_revision"])
		}
		problem(t, a.do("PUT", "/v1/sessions/s1/state/plan", runtime, `{"value": 2}`, "If-Match", `"5"`), 412, "precondition_failed")
		problem(t, a.do("PUT", "/v1/sessions/s1/state/plan", runtime, `{"value": 2}`, "If-None-Match", "*"), 412, "precondition_failed")
		a.ok(a.do("PUT", "/v1/sessions/s1/state/plan", runtime, `{"value": {"step": 2}}`, "If-Match", `"1"`), 200)
		a.ok(a.do("PUT", "/v1/sessions/s1/state/notes", runtime, `{"value": null}`, "If-None-Match", "*"), 200)
		rec = a.do("GET", "/v1/sessions/s1/state", runtime, "")
		conforms(t, "StateEntries", rec.Body.Bytes())
		if body := rec.Body.String(); !strings.Contains(body, `"plan":{"value":{"step":2},"revision":2}`) || !strings.Contains(body, `"notes":{"value":null,"revision":1}`) {
			t.Fatalf("state = %s", body)
		}
		if keys := a.ok(a.do("GET", "/v1/sessions/s1", runtime, ""), 200)["state_keys"]; fmt.Sprint(keys) != "[notes plan]" {
			t.Fatalf("state_keys = %v", keys)
		}

		// The runtime path resolves through the session's pin.
		rec = a.do("GET", prodPath+"/prompt?session_id=s1", runtime, "")
		pr := a.ok(rec, 200)
		conforms(t, "Prompt", rec.Body.Bytes())
		if pr["version"] != float64(1) || pr["pinned"] != true || pr["repinned_from"] != nil {
			t.Fatalf("prompt = %v", pr)
		}
		rec = a.do("POST", prodPath+"/assemble", runtime, `{"session_id": "s1", "history": true}`)
		as := a.ok(rec, 200)
		conforms(t, "Assembled", rec.Body.Bytes())
		if msgs := as["messages"].([]any); len(msgs) != 4 || msgs[3].(map[string]any)["role"] != "tool" || as["pinned"] != true {
			t.Fatalf("assembled = %s", rec.Body)
		}
		problem(t, a.do("GET", "/v1/agents/support/envs/dev/prompt?session_id=s1", runtime, ""), 409, "session_mismatch")
		problem(t, a.do("GET", prodPath+"/prompt?session_id=nope", runtime, ""), 404, "session_not_found")

		// Close: a revision; then every write and the runtime path say closed.
		rec = a.do("POST", "/v1/sessions/s1/close", runtime, `{"expected_revision": 1}`)
		if c := a.ok(rec, 200); c["state"] != "closed" || c["revision"] != float64(2) {
			t.Fatalf("closed = %v", c)
		}
		p = problem(t, a.do("POST", "/v1/sessions/s1/turns", runtime, `{"expected_revision": 2, "turns": [{"role": "user", "content": "x"}]}`), 409, "session_closed")
		if p["state"] != "closed" {
			t.Errorf("state = %v", p["state"])
		}
		problem(t, a.do("GET", prodPath+"/prompt?session_id=s1", runtime, ""), 409, "session_closed")
		problem(t, a.do("POST", "/v1/sessions", runtime, `{"session_id": "s1", "agent": "support", "env": "prod", "user_id": "u1"}`), 409, "session_exists")
	})
}

func TestSession_pin_survivesARelease_andIsRepinnedOnRollback(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.withVersions(2)
		rel := a.createRelease(`{"candidate_version": 2, "percent": 100}`)
		s := a.createSession("s-cand", "u1")
		if s["pinned_version"] != float64(2) {
			t.Fatalf("pinned = %v", s)
		}
		a.ok(a.do("POST", "/v1/releases/"+rel["id"].(string)+"/rollback", admin, ""), 200)
		p := a.ok(a.do("GET", prodPath+"/prompt?session_id=s-cand", runtime, ""), 200)
		if p["version"] != float64(1) || p["pinned"] != true || p["repinned_from"] != float64(2) {
			t.Fatalf("after rollback = %v", p)
		}
	})
}

func TestSession_turns_idempotencyKeyReplays_withoutADuplicate(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.withVersions(1)
		a.createSession("s1", "")
		body := `{"expected_revision": 0, "turns": [{"role": "user", "content": "hello"}]}`
		first := a.do("POST", "/v1/sessions/s1/turns", runtime, body, "Idempotency-Key", "t-1")
		a.ok(first, 201)
		again := a.do("POST", "/v1/sessions/s1/turns", runtime, body, "Idempotency-Key", "t-1")
		if again.Code != 201 || again.Body.String() != first.Body.String() || again.Header().Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay = %d %q %s", again.Code, again.Header().Get("Idempotent-Replayed"), again.Body)
		}
		if got := a.ok(a.do("GET", "/v1/sessions/s1", runtime, ""), 200); got["turn_count"] != float64(1) || got["revision"] != float64(1) {
			t.Fatalf("after replay = %v", got)
		}
		problem(t, a.do("POST", "/v1/sessions/s1/turns", runtime, `{"expected_revision": 1, "turns": [{"role": "user", "content": "other"}]}`,
			"Idempotency-Key", "t-1"), 422, "idempotency_key_reused")
		// A conflict is not stored: after the cause is gone, the same key is a fresh attempt.
		stale := `{"expected_revision": 0, "turns": [{"role": "user", "content": "late"}]}`
		problem(t, a.do("POST", "/v1/sessions/s1/turns", runtime, stale, "Idempotency-Key", "t-2"), 409, "revision_conflict")
		fixed := `{"expected_revision": 1, "turns": [{"role": "user", "content": "late"}]}`
		if out := a.ok(a.do("POST", "/v1/sessions/s1/turns", runtime, fixed, "Idempotency-Key", "t-2"), 201); fmt.Sprint(out["seqs"]) != "[2]" {
			t.Fatalf("fresh = %v", out)
		}
		// Session create and state PUT replay too.
		create := `{"session_id": "s2", "agent": "support", "env": "prod"}`
		c1 := a.do("POST", "/v1/sessions", runtime, create, "Idempotency-Key", "c-1")
		a.ok(c1, 201)
		if c2 := a.do("POST", "/v1/sessions", runtime, create, "Idempotency-Key", "c-1"); c2.Code != 201 || c2.Body.String() != c1.Body.String() ||
			c2.Header().Get("Idempotent-Replayed") != "true" {
			t.Fatalf("create replay = %d %s", c2.Code, c2.Body)
		}
		put := `{"value": 1, "expected_revision": 0}`
		p1 := a.do("PUT", "/v1/sessions/s2/state/k", runtime, put, "Idempotency-Key", "p-1")
		a.ok(p1, 200)
		if p2 := a.do("PUT", "/v1/sessions/s2/state/k", runtime, put, "Idempotency-Key", "p-1"); p2.Code != 200 || p2.Body.String() != p1.Body.String() ||
			p2.Header().Get("Idempotent-Replayed") != "true" {
			t.Fatalf("state replay = %d %s", p2.Code, p2.Body)
		}
	})
}
