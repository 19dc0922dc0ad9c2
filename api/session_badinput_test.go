package api_test

import (
	"strings"
	"testing"
)

// sessionCounts are the rows session writes change, and s1's row.
type sessionCounts struct {
	sessions, turns, state, revision, fence int64
	pinned                                  int
}

func (a *app) sessionCounts() sessionCounts {
	a.t.Helper()
	var c sessionCounts
	for table, dst := range map[string]*int64{"sessions": &c.sessions, "session_turns": &c.turns, "session_state": &c.state} {
		if err := a.db.Raw("SELECT COUNT(*) FROM " + table).Scan(dst).Error; err != nil {
			a.t.Fatal(err)
		}
	}
	row := struct {
		Revision, Fence int64
		PinnedVersion   int
	}{}
	a.db.Raw(`SELECT revision, fence, pinned_version FROM sessions WHERE session_id = 's1'`).Scan(&row)
	c.revision, c.fence, c.pinned = row.Revision, row.Fence, row.PinnedVersion
	return c
}

func TestSession_badInput_getsItsCode_andChangesNothing(t *testing.T) {
	turn := `{"role": "user", "content": "hi"}`
	tooMany := `{"expected_revision": 1, "turns": [` + strings.TrimSuffix(strings.Repeat(turn+",", 10000), ",") + `]}`
	cases := []struct {
		name, method, path, body string
		headers                  []string
		status                   int
		code, field              string
	}{
		// Unknown sessions.
		{"get unknown", "GET", "/v1/sessions/nope", "", nil, 404, "session_not_found", ""},
		{"append to unknown", "POST", "/v1/sessions/nope/turns", `{"expected_revision": 0, "turns": [` + turn + `]}`, nil, 404, "session_not_found", ""},
		{"state of unknown", "PUT", "/v1/sessions/nope/state/k", `{"value": 1, "expected_revision": 0}`, nil, 404, "session_not_found", ""},
		{"read state of unknown", "GET", "/v1/sessions/nope/state", "", nil, 404, "session_not_found", ""},
		{"close unknown", "POST", "/v1/sessions/nope/close", `{"expected_revision": 0}`, nil, 404, "session_not_found", ""},
		{"lease unknown", "POST", "/v1/sessions/nope/lease", `{"holder": "a"}`, nil, 404, "session_not_found", ""},

		// Turns.
		{"wrong role", "POST", "/v1/sessions/s1/turns", `{"expected_revision": 1, "turns": [{"role": "bot", "content": "x"}]}`, nil, 400, "invalid_field", "turns[0].role"},
		{"role in capitals", "POST", "/v1/sessions/s1/turns", `{"expected_revision": 1, "turns": [` + turn + `, {"role": "User", "content": "x"}]}`, nil, 400, "invalid_field", "turns[1].role"},
		{"empty turns", "POST", "/v1/sessions/s1/turns", `{"expected_revision": 1, "turns": []}`, nil, 400, "invalid_field", "turns"},
		{"no turns", "POST", "/v1/sessions/s1/turns", `{"expected_revision": 1}`, nil, 400, "invalid_field", "turns"},
		{"10,000 turns", "POST", "/v1/sessions/s1/turns", tooMany, nil, 400, "invalid_field", "turns"},
		{"content a number", "POST", "/v1/sessions/s1/turns", `{"expected_revision": 1, "turns": [{"role": "user", "content": 5}]}`, nil, 400, "invalid_field", "turns[0].content"},
		{"content missing", "POST", "/v1/sessions/s1/turns", `{"expected_revision": 1, "turns": [{"role": "user"}]}`, nil, 400, "invalid_field", "turns[0].content"},
		{"unknown turn member", "POST", "/v1/sessions/s1/turns", `{"expected_revision": 1, "turns": [{"role": "user", "content": "x", "mood": "sad"}]}`, nil, 400, "invalid_field", "turns[0].mood"},
		{"turn not an object", "POST", "/v1/sessions/s1/turns", `{"expected_revision": 1, "turns": ["hi"]}`, nil, 400, "invalid_field", "turns[0]"},
		{"tool turn without call id", "POST", "/v1/sessions/s1/turns", `{"expected_revision": 1, "turns": [{"role": "tool", "content": "x"}]}`, nil, 400, "invalid_field", "turns[0].tool_call_id"},
		{"tool_calls on a user turn", "POST", "/v1/sessions/s1/turns", `{"expected_revision": 1, "turns": [{"role": "user", "content": "x", "tool_calls": []}]}`, nil, 400, "invalid_field", "turns[0].tool_calls"},
		{"turn over 256 KiB", "POST", "/v1/sessions/s1/turns", `{"expected_revision": 1, "turns": [{"role": "user", "content": "` + strings.Repeat("x", 256<<10) + `"}]}`, nil, 400, "invalid_field", "turns[0]"},
		{"negative expected_revision", "POST", "/v1/sessions/s1/turns", `{"expected_revision": -1, "turns": [` + turn + `]}`, nil, 400, "invalid_field", "expected_revision"},
		{"fractional expected_revision", "POST", "/v1/sessions/s1/turns", `{"expected_revision": 1.5, "turns": [` + turn + `]}`, nil, 400, "invalid_field", "expected_revision"},
		{"no expected_revision", "POST", "/v1/sessions/s1/turns", `{"turns": [` + turn + `]}`, nil, 428, "precondition_required", ""},
		{"zero fence", "POST", "/v1/sessions/s1/turns", `{"expected_revision": 1, "fence": 0, "turns": [` + turn + `]}`, nil, 400, "invalid_field", "fence"},
		{"header and body disagree", "POST", "/v1/sessions/s1/turns", `{"expected_revision": 1, "turns": [` + turn + `]}`, []string{"If-Match", `"2"`}, 400, "invalid_field", "expected_revision"},
		{"stale revision", "POST", "/v1/sessions/s1/turns", `{"expected_revision": 0, "turns": [` + turn + `]}`, nil, 409, "revision_conflict", ""},
		{"session id with {", "POST", "/v1/sessions/s%7B1/turns", `{"expected_revision": 1, "turns": [` + turn + `]}`, nil, 400, "invalid_id", "session_id"},
		{"body over 1 MiB", "POST", "/v1/sessions/s1/turns", `{"expected_revision": 1, "turns": [{"role": "user", "content": "` + strings.Repeat("x", 1<<20) + `"}]}`, nil, 413, "body_too_large", ""},

		// State entries.
		{"value missing", "PUT", "/v1/sessions/s1/state/k", `{"expected_revision": 0}`, nil, 400, "invalid_field", "value"},
		{"state key with :", "PUT", "/v1/sessions/s1/state/a%3Ab", `{"value": 1, "expected_revision": 0}`, nil, 400, "invalid_id", "key"},
		{"state negative revision", "PUT", "/v1/sessions/s1/state/k", `{"value": 1, "expected_revision": -2}`, nil, 400, "invalid_field", "expected_revision"},
		{"state no revision", "PUT", "/v1/sessions/s1/state/k", `{"value": 1}`, nil, 428, "precondition_required", ""},
		{"value over 256 KiB", "PUT", "/v1/sessions/s1/state/k", `{"value": "` + strings.Repeat("v", 256<<10) + `", "expected_revision": 0}`, nil, 400, "invalid_field", "value"},

		// Create.
		{"create without agent", "POST", "/v1/sessions", `{"env": "prod"}`, nil, 400, "invalid_id", "agent"},
		{"create with a bad id", "POST", "/v1/sessions", `{"session_id": "a b", "agent": "support", "env": "prod"}`, nil, 400, "invalid_id", "session_id"},
		{"create with an empty user", "POST", "/v1/sessions", `{"agent": "support", "env": "prod", "user_id": ""}`, nil, 400, "invalid_id", "user_id"},
		{"metadata not an object", "POST", "/v1/sessions", `{"agent": "support", "env": "prod", "metadata": [1]}`, nil, 400, "invalid_field", "metadata"},
		{"idle_ttl_ms too small", "POST", "/v1/sessions", `{"agent": "support", "env": "prod", "idle_ttl_ms": 10}`, nil, 400, "invalid_field", "idle_ttl_ms"},
		{"idle_ttl_ms huge", "POST", "/v1/sessions", `{"agent": "support", "env": "prod", "idle_ttl_ms": 9223372036854775807}`, nil, 400, "invalid_field", "idle_ttl_ms"},
		{"create in an env without pointer", "POST", "/v1/sessions", `{"agent": "support", "env": "dev"}`, nil, 409, "no_pointer", ""},
		{"create for an unknown agent", "POST", "/v1/sessions", `{"agent": "nobody", "env": "prod"}`, nil, 404, "agent_not_found", ""},

		// Leases.
		{"ttl_ms too small", "POST", "/v1/sessions/s1/lease", `{"holder": "a", "ttl_ms": 99}`, nil, 400, "invalid_field", "ttl_ms"},
		{"ttl_ms too large", "POST", "/v1/sessions/s1/lease", `{"holder": "a", "ttl_ms": 60001}`, nil, 400, "invalid_field", "ttl_ms"},
		{"wait_ms too large", "POST", "/v1/sessions/s1/lease", `{"holder": "a", "wait_ms": 30001}`, nil, 400, "invalid_field", "wait_ms"},
		{"wait_ms negative", "POST", "/v1/sessions/s1/lease", `{"holder": "a", "wait_ms": -1}`, nil, 400, "invalid_field", "wait_ms"},
		{"unknown mode", "POST", "/v1/sessions/s1/lease", `{"holder": "a", "mode": "steal"}`, nil, 400, "invalid_field", "mode"},
		{"no holder", "POST", "/v1/sessions/s1/lease", `{"ttl_ms": 1000}`, nil, 400, "invalid_id", "holder"},
		{"holder with a control char", "POST", "/v1/sessions/s1/lease", `{"holder": "a\u0000b"}`, nil, 400, "invalid_id", "holder"},
		{"renew without a token", "POST", "/v1/sessions/s1/lease/renew", `{"ttl_ms": 1000}`, nil, 400, "invalid_field", "Lease-Token"},
		{"renew without ttl_ms", "POST", "/v1/sessions/s1/lease/renew", `{}`, []string{"Lease-Token", "t"}, 400, "invalid_field", "ttl_ms"},
		{"renew ttl_ms too large", "POST", "/v1/sessions/s1/lease/renew", `{"ttl_ms": 70000}`, []string{"Lease-Token", "t"}, 400, "invalid_field", "ttl_ms"},
		{"renew an unknown token", "POST", "/v1/sessions/s1/lease/renew", `{"ttl_ms": 1000}`, []string{"Lease-Token", "not-the-token"}, 409, "lease_lost", ""},
		{"release without a token", "DELETE", "/v1/sessions/s1/lease", "", nil, 400, "invalid_field", "Lease-Token"},

		// Queries.
		{"since negative", "GET", "/v1/sessions/s1?since=-1", "", nil, 400, "invalid_field", "since"},
		{"limit 0", "GET", "/v1/sessions/s1?limit=0", "", nil, 400, "invalid_field", "limit"},
		{"no token", "GET", "/v1/sessions/s1", "", nil, 401, "unauthorized", ""},
	}
	forEachDialect(t, func(t *testing.T, a *app) {
		a.withVersions(1)
		a.createSession("s1", "u1")
		a.ok(a.do("POST", "/v1/sessions/s1/turns", runtime, `{"expected_revision": 0, "turns": [`+turn+`]}`), 201)
		before := a.sessionCounts()
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				token := runtime
				if tc.code == "unauthorized" {
					token = ""
				}
				p := problem(t, a.do(tc.method, tc.path, token, tc.body, tc.headers...), tc.status, tc.code)
				if tc.field != "" && p["field"] != tc.field {
					t.Errorf("field = %v, want %s (%v)", p["field"], tc.field, p["detail"])
				}
				if after := a.sessionCounts(); after != before {
					t.Fatalf("rows changed: %+v -> %+v", before, after)
				}
			})
		}

		// The token of another session's lease releases nothing: 409
		// lease_lost, and the holder keeps its lease.
		a.createSession("s2", "u1")
		a.ok(a.do("POST", "/v1/sessions/s1/lease", runtime, `{"holder": "worker-a", "ttl_ms": 10000}`), 200)
		other := a.ok(a.do("POST", "/v1/sessions/s2/lease", runtime, `{"holder": "worker-b", "ttl_ms": 10000}`), 200)
		before = a.sessionCounts()
		problem(t, a.do("DELETE", "/v1/sessions/s1/lease", runtime, "", "Lease-Token", other["token"].(string)), 409, "lease_lost")
		problem(t, a.do("POST", "/v1/sessions/s1/lease/renew", runtime, `{"ttl_ms": 1000}`, "Lease-Token", other["token"].(string)), 409, "lease_lost")
		if l := a.ok(a.do("GET", "/v1/sessions/s1", runtime, ""), 200)["lease"].(map[string]any); l["holder"] != "worker-a" {
			t.Fatalf("lease = %v", l)
		}
		if after := a.sessionCounts(); after != before {
			t.Fatalf("rows changed: %+v -> %+v", before, after)
		}
	})
}
