package api_test

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/sqlstore"
)

// The console pages every list it shows (api/openapi.yaml: limit, default 50, max
// 500; cursor; next). These are the lists that did not.

func TestWebhooks_list_isPaginatedWithLimitAndCursor(t *testing.T) {
	testenv.ForEachDialect(t, promptd.Migrations(), func(t *testing.T, db *gorm.DB) {
		a := webhookAppOn(t, db, true)
		created := map[string]bool{}
		for i := range 5 {
			m := a.ok(a.do("POST", "/v1/webhooks", admin, fmt.Sprintf(`{"url": %q, "actions": ["*"]}`, fmt.Sprintf("%s/%d", hookURL, i))), 201)
			created[m["id"].(string)] = true
		}
		seen, pages, next := map[string]bool{}, 0, ""
		for {
			path := "/v1/webhooks?limit=2"
			if next != "" {
				path += "&cursor=" + url.QueryEscape(next)
			}
			page := a.ok(a.do("GET", path, admin, ""), 200)
			items := page["items"].([]any)
			if len(items) > 2 {
				t.Fatalf("limit=2 answered %d webhooks", len(items))
			}
			for _, it := range items {
				id := it.(map[string]any)["id"].(string)
				if seen[id] {
					t.Fatalf("webhook %s on two pages", id)
				}
				seen[id] = true
			}
			pages++
			n, _ := page["next"].(string)
			if n == "" || pages > 5 {
				break
			}
			next = n
		}
		if len(seen) != len(created) || pages != 3 {
			t.Errorf("%d pages held %d of %d webhooks", pages, len(seen), len(created))
		}
		// Without a limit, one page of the default size holds all five.
		if all := a.ok(a.do("GET", "/v1/webhooks", admin, ""), 200); len(all["items"].([]any)) != 5 || all["next"] != nil {
			t.Errorf("default page = %v", all)
		}
		problem(t, a.do("GET", "/v1/webhooks?cursor=nonsense", admin, ""), 400, "invalid_field")
		problem(t, a.do("GET", "/v1/webhooks?limit=0", admin, ""), 400, "invalid_field")
	})
}

func TestEnvHistory_pagesThroughEveryMoveBeyondTheLast20(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.createVersion("bot", 0, "one")
		a.createVersion("bot", 1, "two")
		a.publish("bot", "prod", 1, 0)
		for rev := int64(1); rev < 25; rev++ {
			a.publish("bot", "prod", int(rev%2)+1, rev)
		}
		if h := a.ok(a.do("GET", "/v1/agents/bot/envs/prod", admin, ""), 200)["history"].([]any); len(h) != 20 {
			t.Fatalf("the env shows %d moves, want its last 20", len(h))
		}
		var revisions []int
		next, pages := "", 0
		for pages < 10 {
			path := "/v1/agents/bot/envs/prod/history?limit=10"
			if next != "" {
				path += "&cursor=" + next
			}
			page := a.ok(a.do("GET", path, runtime, ""), 200)
			pages++
			for _, m := range page["items"].([]any) {
				revisions = append(revisions, int(m.(map[string]any)["revision"].(float64)))
			}
			n, _ := page["next"].(string)
			if n == "" {
				break
			}
			next = n
		}
		if pages != 3 || len(revisions) != 25 || revisions[0] != 25 || revisions[24] != 1 {
			t.Fatalf("%d pages, revisions %v; want 25 moves newest first on 3 pages", pages, revisions)
		}
		for i := 1; i < len(revisions); i++ {
			if revisions[i] != revisions[i-1]-1 {
				t.Fatalf("revisions %v skip or repeat", revisions)
			}
		}
		if items := a.ok(a.do("GET", "/v1/agents/bot/envs/staging/history", admin, ""), 200)["items"].([]any); len(items) != 0 {
			t.Errorf("an env never pointed at has %d moves", len(items))
		}
		problem(t, a.do("GET", "/v1/agents/nobody/envs/prod/history", admin, ""), 404, "agent_not_found")
		problem(t, a.do("GET", "/v1/agents/bot/envs/prod/history?cursor=x", admin, ""), 400, "invalid_field")
		tok := a.createToken(`{"name": "other-team", "role": "runtime", "scopes": {"agents": ["other-*"]}}`)
		problem(t, a.do("GET", "/v1/agents/bot/envs/prod/history", tok, ""), 403, "forbidden")
	})
}

// Every list a console page shows pages (api/openapi.yaml: limit, cursor, next):
// with limit=1 each answers one item and a next that leads to another.
func TestConsoleLists_everyListThePagesShow_pagesWithLimitAndNext(t *testing.T) {
	b := newBenchServer(t, testenv.OpenDB(t, sqlstore.Config{SQLitePath: filepath.Join(t.TempDir(), "promptd.db")}, promptd.Migrations()))
	b.seed(benchSize{agents: 3, versions: 3, sessions: 2, records: 2, tokens: 2, releases: 1, requests: 2})
	b.must(200, "PUT", "/v1/agents/agent-0001/envs/prod", `{"version": 1, "expected_revision": 1}`) // a second move
	b.must(201, "POST", "/v1/sessions/sess-00000/turns", `{"expected_revision": 1, "turns": [{"role": "user", "content": "more"}]}`, "Idempotency-Key", "more")
	var rel string
	for _, r := range b.must(200, "GET", "/v1/agents/agent-0000/envs/prod/releases", "")["items"].([]any) {
		rel = r.(map[string]any)["id"].(string)
	}
	b.must(200, "POST", "/v1/releases/"+rel+"/rollback", `{}`)
	b.must(201, "POST", "/v1/agents/agent-0000/envs/prod/releases", `{"candidate_version": 1, "percent": 5, "stickiness": "user"}`, "Idempotency-Key", "again")
	var hook string
	for _, w := range b.must(200, "GET", "/v1/webhooks", "")["items"].([]any) {
		hook = w.(map[string]any)["id"].(string)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && len(b.must(200, "GET", "/v1/webhooks/"+hook+"/deliveries", "")["items"].([]any)) < 2 {
		time.Sleep(50 * time.Millisecond)
	}
	lists := []struct{ path, items, next, param string }{
		{"/v1/agents", "items", "next", "cursor"},
		{"/v1/agents/agent-0000/versions", "items", "next", "cursor"},
		{"/v1/agents/agent-0001/envs/prod/history", "items", "next", "cursor"},
		{"/v1/agents/agent-0000/envs/prod/releases", "items", "next", "cursor"},
		{"/v1/sessions/sess-00000", "turns", "next_since", "since"},
		{"/v1/boards/tasks/records", "items", "next", "cursor"},
		{"/v1/webhooks", "items", "next", "cursor"},
		{"/v1/webhooks/" + hook + "/deliveries", "items", "next", "cursor"},
		{"/v1/tokens", "items", "next", "cursor"},
		{"/v1/change-requests", "items", "next", "cursor"},
		{"/v1/audit?order=desc", "items", "next", "cursor"},
		{"/v1/audit?action=session.created&order=desc", "items", "next", "cursor"},
	}
	for _, l := range lists {
		sep := "?"
		if strings.Contains(l.path, "?") {
			sep = "&"
		}
		first := b.must(200, "GET", l.path+sep+"limit=1", "")
		items, _ := first[l.items].([]any)
		next := fmt.Sprint(first[l.next])
		if len(items) != 1 || first[l.next] == nil || next == "" {
			t.Errorf("GET %s?limit=1: %d %s, next %v; want one and a next", l.path, len(items), l.items, first[l.next])
			continue
		}
		second := b.must(200, "GET", l.path+sep+"limit=1&"+l.param+"="+url.QueryEscape(next), "")
		more, _ := second[l.items].([]any)
		if len(more) != 1 || fmt.Sprint(more[0]) == fmt.Sprint(items[0]) {
			t.Errorf("GET %s: the next page = %v after %v", l.path, more, items)
		}
	}
}
