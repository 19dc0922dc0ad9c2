package api_test

import (
	"fmt"
	"net/url"
	"testing"
)

// pageAll walks a list from its first page with limit, calling between
// after each page but the last, and returns the items in order; it fails
// on an item listed twice.
func pageAll(t *testing.T, a *app, path, token, key string, limit int, between func(page int)) []map[string]any {
	t.Helper()
	var out []map[string]any
	seen := map[string]bool{}
	next := ""
	for page := 0; page < 50; page++ {
		p := fmt.Sprintf("%s%slimit=%d", path, sep(path), limit)
		if next != "" {
			p += "&cursor=" + url.QueryEscape(next)
		}
		m := a.ok(a.do("GET", p, token, ""), 200)
		items := m["items"].([]any)
		if len(items) > limit {
			t.Fatalf("limit=%d answered %d items", limit, len(items))
		}
		for _, it := range items {
			item := it.(map[string]any)
			if id := item[key].(string); seen[id] {
				t.Fatalf("%s listed twice", id)
			} else {
				seen[id] = true
			}
			out = append(out, item)
		}
		n, _ := m["next"].(string)
		if n == "" {
			return out
		}
		next = n
		if between != nil {
			between(page)
		}
	}
	t.Fatal("more than 50 pages")
	return nil
}

func sep(path string) string {
	for _, c := range path {
		if c == '?' {
			return "&"
		}
	}
	return "?"
}

func TestSessions_list_pagesNewestFirstWithoutDuplicatesOrGapsWhileSessionsAreCreated(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.createVersion("bot", 0, "one")
		a.publish("bot", "prod", 1, 0)
		a.publish("bot", "staging", 1, 0)
		before := map[string]bool{}
		for i := range 7 {
			env := []string{"prod", "staging"}[i%2]
			m := a.ok(a.do("POST", "/v1/sessions", runtime, fmt.Sprintf(`{"agent": "bot", "env": %q, "user_id": "u%d"}`, env, i)), 201)
			before[m["session_id"].(string)] = true
		}
		var created []string
		items := pageAll(t, a, "/v1/sessions", runtime, "session_id", 3, func(int) {
			m := a.ok(a.do("POST", "/v1/sessions", runtime, `{"agent": "bot", "env": "prod"}`), 201)
			created = append(created, m["session_id"].(string))
		})
		got := map[string]bool{}
		for i, it := range items {
			got[it["session_id"].(string)] = true
			if i > 0 && it["created_at"].(string) > items[i-1]["created_at"].(string) {
				t.Errorf("item %d created %v after item %d (%v): not newest first", i, it["created_at"], i-1, items[i-1]["created_at"])
			}
		}
		for id := range before {
			if !got[id] {
				t.Errorf("session %s, there before the first page, was never listed", id)
			}
		}
		if len(created) == 0 {
			t.Fatal("no page boundary was crossed")
		}
		// Filters: exact agent, env and state.
		a.ok(a.do("POST", "/v1/sessions/"+created[0]+"/close", runtime, `{"expected_revision": 0}`), 200)
		staging := a.ok(a.do("GET", "/v1/sessions?agent=bot&env=staging", runtime, ""), 200)["items"].([]any)
		if len(staging) != 3 {
			t.Errorf("env=staging listed %d sessions, want 3", len(staging))
		}
		closed := a.ok(a.do("GET", "/v1/sessions?state=closed", runtime, ""), 200)["items"].([]any)
		if len(closed) != 1 || closed[0].(map[string]any)["session_id"] != created[0] {
			t.Errorf("state=closed listed %v, want only %s", closed, created[0])
		}
		if n := len(a.ok(a.do("GET", "/v1/sessions?agent=other", runtime, ""), 200)["items"].([]any)); n != 0 {
			t.Errorf("agent=other listed %d sessions", n)
		}
	})
}

func TestSessions_list_showsTheLeaseHolderAndFenceWhileHeld(t *testing.T) {
	a := sqliteApp(t)
	a.createVersion("bot", 0, "one")
	a.publish("bot", "prod", 1, 0)
	id := a.ok(a.do("POST", "/v1/sessions", runtime, `{"agent": "bot", "env": "prod"}`), 201)["session_id"].(string)
	free := a.ok(a.do("POST", "/v1/sessions", runtime, `{"agent": "bot", "env": "prod"}`), 201)["session_id"].(string)
	lease := a.ok(a.do("POST", "/v1/sessions/"+id+"/lease", runtime, `{"holder": "worker-7"}`), 200)
	for _, it := range a.ok(a.do("GET", "/v1/sessions", runtime, ""), 200)["items"].([]any) {
		s := it.(map[string]any)
		switch s["session_id"] {
		case id:
			l, _ := s["lease"].(map[string]any)
			if l == nil || l["holder"] != "worker-7" || l["fence"] != lease["fence"] {
				t.Errorf("leased session's lease = %v, want holder worker-7 fence %v", s["lease"], lease["fence"])
			}
		case free:
			if s["lease"] != nil {
				t.Errorf("free session's lease = %v, want null", s["lease"])
			}
		}
	}
}

func TestSessions_list_scopedToken_seesOnlyItsAgentsAndEnvs(t *testing.T) {
	a := sqliteApp(t)
	for _, agent := range []string{"team-a-bot", "team-b-bot"} {
		a.createVersion(agent, 0, "one")
		a.publish(agent, "prod", 1, 0)
		a.publish(agent, "staging", 1, 0)
	}
	want := map[string]bool{}
	for _, s := range []struct{ agent, env string }{{"team-a-bot", "prod"}, {"team-a-bot", "staging"}, {"team-b-bot", "prod"},
		{"team-a-bot", "prod"}, {"team-b-bot", "staging"}} {
		m := a.ok(a.do("POST", "/v1/sessions", runtime, fmt.Sprintf(`{"agent": %q, "env": %q}`, s.agent, s.env)), 201)
		if s.agent == "team-a-bot" && s.env == "prod" {
			want[m["session_id"].(string)] = true
		}
	}
	scoped := a.createToken(`{"name": "team-a", "role": "runtime", "scopes": {"agents": ["team-a-*"], "envs": ["prod"]}}`)
	got := pageAll(t, a, "/v1/sessions", scoped, "session_id", 2, nil)
	if len(got) != len(want) {
		t.Errorf("the scoped token saw %d sessions, want %d", len(got), len(want))
	}
	for _, s := range got {
		if !want[s["session_id"].(string)] {
			t.Errorf("the scoped token saw %s/%s session %s", s["agent"], s["env"], s["session_id"])
		}
	}
	// The control: an unscoped token sees all five.
	if all := pageAll(t, a, "/v1/sessions", runtime, "session_id", 2, nil); len(all) != 5 {
		t.Errorf("the unscoped token saw %d sessions, want 5", len(all))
	}
}

func TestSessions_list_badQuery_isInvalidField(t *testing.T) {
	a := sqliteApp(t)
	for _, q := range []string{"limit=0", "limit=501", "limit=x", "cursor=nonsense", "cursor=12:", "cursor=x:s_1", "state=gone", "state="} {
		problem(t, a.do("GET", "/v1/sessions?"+q, runtime, ""), 400, "invalid_field")
	}
	problem(t, a.do("GET", "/v1/sessions?agent=a%7Bb", runtime, ""), 400, "invalid_id")
}

func TestBoards_list_pagesByNameWithCountsPerStateWhileBoardsAreCreated(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		for _, b := range []string{"b1", "b3", "b5", "b7", "b9"} {
			a.ok(a.do("POST", "/v1/boards/"+b+"/records", runtime, `{"payload": {}}`), 201)
		}
		a.ok(a.do("POST", "/v1/boards/b3/records", runtime, `{"payload": {}}`), 201)
		a.ok(a.do("POST", "/v1/boards/b3/claim", runtime, `{"holder": "w1", "ttl_ms": 60000}`, "Idempotency-Key", "c-1"), 200)
		inserted := map[int][]string{0: {"b0", "b4"}, 1: {"b8"}}
		items := pageAll(t, a, "/v1/boards", runtime, "board", 2, func(page int) {
			for _, b := range inserted[page] {
				a.ok(a.do("POST", "/v1/boards/"+b+"/records", runtime, `{"payload": {}}`), 201)
			}
		})
		var names []string
		for _, it := range items {
			names = append(names, it["board"].(string))
		}
		// After the first page (b1 b3), b0 (before its cursor) and b4
		// (after it) are created, after the second (b4 b5) b8: the pages
		// go on in name order with neither a repeat nor a gap, and b0,
		// behind them, is not listed.
		if fmt.Sprint(names) != "[b1 b3 b4 b5 b7 b8 b9]" {
			t.Errorf("boards listed %v, want [b1 b3 b4 b5 b7 b8 b9]", names)
		}
		for _, it := range items {
			counts := it["counts"].(map[string]any)
			want := map[string]float64{"pending": 1, "claimed": 0, "running": 0, "done": 0, "failed": 0, "cancelled": 0}
			if it["board"] == "b3" {
				want["claimed"] = 1
			}
			if len(counts) != len(want) {
				t.Errorf("%s counts = %v, want %v", it["board"], counts, want)
			}
			for st, n := range want {
				if counts[st] != n {
					t.Errorf("%s counts[%s] = %v, want %v", it["board"], st, counts[st], n)
				}
			}
		}
	})
}

func TestBoards_list_scopedToken_seesOnlyItsBoards(t *testing.T) {
	a := sqliteApp(t)
	for _, b := range []string{"team-a-jobs", "team-b-jobs", "team-a-mail", "other"} {
		a.ok(a.do("POST", "/v1/boards/"+b+"/records", runtime, `{"payload": {}}`), 201)
	}
	scoped := a.createToken(`{"name": "team-a", "role": "runtime", "scopes": {"boards": ["team-a-*"]}}`)
	var names []string
	for _, b := range pageAll(t, a, "/v1/boards", scoped, "board", 1, nil) {
		names = append(names, b["board"].(string))
	}
	if fmt.Sprint(names) != "[team-a-jobs team-a-mail]" {
		t.Errorf("the scoped token saw %v, want [team-a-jobs team-a-mail]", names)
	}
	if all := pageAll(t, a, "/v1/boards", runtime, "board", 1, nil); len(all) != 4 {
		t.Errorf("the unscoped token saw %d boards, want 4", len(all))
	}
}

func TestBoards_list_badQuery_isInvalidField(t *testing.T) {
	a := sqliteApp(t)
	for _, q := range []string{"limit=0", "limit=501", "limit=-1", "cursor=a%7Bb", "cursor=" + url.QueryEscape("x y")} {
		problem(t, a.do("GET", "/v1/boards?"+q, runtime, ""), 400, "invalid_field")
	}
}

func TestAudit_actorFilter_listsOnlyThatActorsEvents(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		ci := a.createToken(`{"name": "ci-runner", "role": "admin"}`)
		a.createVersion("bot", 0, "by admin")
		a.ok(a.do("POST", "/v1/agents/bot/versions", ci, `{"base_version": 1, "config": {"system": "by ci"}, "message": "m"}`), 201)
		a.ok(a.do("POST", "/v1/agents/bot/versions", ci, `{"base_version": 2, "config": {"system": "by ci 2"}, "message": "m"}`), 201)
		items := pageAll(t, a, "/v1/audit?actor=ci-runner&order=desc", admin, "resource", 1, nil)
		if len(items) != 2 {
			t.Fatalf("actor=ci-runner listed %d events, want 2: %v", len(items), items)
		}
		for _, e := range items {
			if e["actor"] != "ci-runner" {
				t.Errorf("actor=ci-runner listed an event by %v", e["actor"])
			}
		}
		// The control: without the filter, the admin's version is listed too.
		all := a.ok(a.do("GET", "/v1/audit?action=version.created", admin, ""), 200)["items"].([]any)
		if len(all) != 3 {
			t.Errorf("version.created events = %d, want 3", len(all))
		}
		if n := len(a.ok(a.do("GET", "/v1/audit?actor=ci", admin, ""), 200)["items"].([]any)); n != 0 {
			t.Errorf("actor=ci (a prefix) listed %d events, want 0: the match is exact", n)
		}
		problem(t, a.do("GET", "/v1/audit?actor=", admin, ""), 400, "invalid_id")
		problem(t, a.do("GET", "/v1/audit?actor=a%01b", admin, ""), 400, "invalid_id")
	})
}
