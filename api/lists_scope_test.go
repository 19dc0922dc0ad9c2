package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/api"
	"github.com/promptd/promptd/events"
	"github.com/promptd/promptd/internal/harness/testenv"
)

// A scoped token's lists are filtered in SQL before their LIMIT: among
// many out-of-scope items created before and after a few in-scope ones, it
// pages full pages of exactly its items, in order, with no empty page
// before the end.

const (
	scopedFill  = 300 // out-of-scope items, half before and half after
	scopedWant  = 23  // in-scope items
	scopedLimit = 10
)

// checkScopedPages pages path with limit=scopedLimit as token and checks
// that the items' key values are want, in order, every page but the last
// full, and the last not empty.
func checkScopedPages(t *testing.T, a *app, path, token, key string, want []string) {
	t.Helper()
	var got []string
	next := ""
	for page := 1; ; page++ {
		p := fmt.Sprintf("%s%slimit=%d", path, sep(path), scopedLimit)
		if next != "" {
			p += "&cursor=" + url.QueryEscape(next)
		}
		m := a.ok(a.do("GET", p, token, ""), 200)
		items := m["items"].([]any)
		for _, it := range items {
			got = append(got, it.(map[string]any)[key].(string))
		}
		next, _ = m["next"].(string)
		if next != "" && len(items) != scopedLimit {
			t.Fatalf("%s: page %d has %d items and a next page, want %d", path, page, len(items), scopedLimit)
		}
		if next == "" {
			if len(items) == 0 && len(want) > 0 {
				t.Fatalf("%s: page %d, the last, is empty", path, page)
			}
			break
		}
		if page > 2*len(want) {
			t.Fatalf("%s: more than %d pages", path, page)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s listed %d items %v, want %d %v", path, len(got), got, len(want), want)
	}
}

// importAgents creates a version of each agent in one import.
func (a *app) importAgents(agents []string) {
	a.t.Helper()
	items := make([]string, len(agents))
	for i, ag := range agents {
		items[i] = fmt.Sprintf(`{"agent": %q, "base_version": 0, "config": {"system": "s"}, "message": "m"}`, ag)
	}
	a.ok(a.do("POST", "/v1/import", admin, `{"mode": "all_or_nothing", "items": [`+strings.Join(items, ",")+`]}`), 200)
}

func scopeNames(format string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(format, i)
	}
	return out
}

// nearTeamA are names next to the range of team-a-*, out of it.
var nearTeamA = []string{"team-a", "team-a.x", "team-a_x", "team-A-x", "team-b-x", "team-a0"}

func TestLists_scopedAgents_pageFullPagesOfInScopeAgentsAmongMany(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.importAgents(append(scopeNames("aaa-%03d", scopedFill/2), nearTeamA...))
		want := scopeNames("team-a-%02d", scopedWant)
		a.importAgents(want)
		a.importAgents(scopeNames("zzz-%03d", scopedFill/2))
		scoped := a.createToken(`{"name": "team-a", "role": "runtime", "scopes": {"agents": ["team-a-*", "team-a-00", "team-a-0*"]}}`)
		checkScopedPages(t, a, "/v1/agents", scoped, "agent", want)
		none := a.createToken(`{"name": "nobody", "role": "runtime", "scopes": {"agents": []}}`)
		checkScopedPages(t, a, "/v1/agents", none, "agent", nil)
	})
}

func TestLists_scopedSessions_pageFullPagesOfInScopeSessionsAmongMany(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		for _, ag := range []string{"team-a-bot", "team-b-bot"} {
			a.createVersion(ag, 0, "s")
			a.publish(ag, "prod", 1, 0)
			a.publish(ag, "staging", 1, 0)
		}
		create := func(agent, env string) string {
			return a.ok(a.do("POST", "/v1/sessions", runtime, fmt.Sprintf(`{"agent": %q, "env": %q}`, agent, env)), 201)["session_id"].(string)
		}
		fill := func(n int) {
			for i := range n {
				if i%2 == 0 {
					create("team-b-bot", "prod")
				} else {
					create("team-a-bot", "staging")
				}
			}
		}
		fill(scopedFill / 2)
		var want []string
		for range scopedWant {
			want = append(want, create("team-a-bot", "prod"))
			// The list orders by created_at_ms, then by id: two of these in
			// one millisecond would come in id order, not creation order.
			time.Sleep(2 * time.Millisecond)
		}
		fill(scopedFill / 2)
		slices.Reverse(want) // newest first
		scoped := a.createToken(`{"name": "team-a", "role": "runtime", "scopes": {"agents": ["team-a-*"], "envs": ["prod"]}}`)
		checkScopedPages(t, a, "/v1/sessions", scoped, "session_id", want)
		checkScopedPages(t, a, "/v1/sessions?agent=team-a-bot", scoped, "session_id", want)
	})
}

func TestLists_scopedBoards_pageFullPagesOfInScopeBoardsAmongMany(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		want := scopeNames("team-a-%02d", scopedWant)
		all := append(append(scopeNames("aaa-%03d", scopedFill/2), nearTeamA...), scopeNames("zzz-%03d", scopedFill/2)...)
		all = append(all, want...)
		// one token creates at most PROMPTD_BOARD_MAX_PER_TOKEN (100) boards
		creators := []string{runtime}
		for i := 0; i < len(all)/100; i++ {
			creators = append(creators, a.createToken(fmt.Sprintf(`{"name": "filler-%d", "role": "runtime"}`, i)))
		}
		for i, b := range all {
			a.ok(a.do("POST", "/v1/boards/"+b+"/records", creators[i%len(creators)], `{"payload": {}}`), 201)
		}
		scoped := a.createToken(`{"name": "team-a", "role": "runtime", "scopes": {"boards": ["team-a-*"]}}`)
		checkScopedPages(t, a, "/v1/boards", scoped, "board", want)
	})
}

func TestLists_scopedChangeRequests_pageFullPagesOfInScopeRequestsAmongMany(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		for _, ag := range []string{"team-a-bot", "team-b-bot"} {
			a.createVersion(ag, 0, "one")
			a.createVersion(ag, 1, "two")
			a.publish(ag, "prod", 1, 0)
		}
		a.ok(a.do("PUT", "/v1/protections/prod", admin, `{"approvals": 1, "expected_revision": 0}`), 200)
		request := func(agent string) string {
			rev := a.pointerRevision(agent, "prod")
			body := a.ok(a.do("PUT", "/v1/agents/"+agent+"/envs/prod", admin, fmt.Sprintf(`{"version": 2, "expected_revision": %d}`, rev)), 202)
			return body["change_request"].(map[string]any)["id"].(string)
		}
		for range scopedFill / 2 {
			request("team-b-bot")
		}
		var want []string
		for range scopedWant {
			want = append(want, request("team-a-bot"))
		}
		for range scopedFill / 2 {
			request("team-b-bot")
		}
		slices.Reverse(want) // newest first
		scoped := a.createToken(`{"name": "team-a", "role": "admin", "scopes": {"agents": ["team-a-*"]}}`)
		checkScopedPages(t, a, "/v1/change-requests", scoped, "id", want)
	})
}

// The feed: a scoped reader's long-polls are full pages of its events
// although out-of-scope events would fill PROMPTD_FEED_SCAN_MAX, served
// from the feed's ring of recent events and from the store behind it.
func TestLists_scopedFeed_longPollsFullPagesOfInScopeEventsAmongMany(t *testing.T) {
	for _, ring := range []int{0, 8} {
		t.Run(fmt.Sprintf("ring=%d", ring), func(t *testing.T) {
			testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
				a := newApp(t, db, func(c *api.Config) {
					c.FeedScanMax = 50
					if ring > 0 {
						ctx, cancel := context.WithCancel(context.Background())
						f := events.NewFeed(events.FeedOptions{DB: db, Ring: ring, Poll: 20 * time.Millisecond})
						done := make(chan struct{})
						go func() { defer close(done); f.Run(ctx) }()
						t.Cleanup(func() { cancel(); <-done })
						c.Runtime.Feed = f // this test's runtime only
					}
				})
				a.importAgents(scopeNames("aaa-%03d", scopedFill/2))
				want := scopeNames("team-a-%02d", scopedWant)
				a.importAgents(want)
				a.importAgents(scopeNames("zzz-%03d", scopedFill/2))
				// Every event is stamped (3 imports, one version each).
				if evs, next := a.pollUntil("&limit=1000", admin, "0", scopedFill+scopedWant+3); len(evs) != scopedFill+scopedWant+3 {
					var st struct{ N, Unstamped, MaxSeq int64 }
					a.db.Raw(`SELECT COUNT(*) AS n, SUM(CASE WHEN seq IS NULL THEN 1 ELSE 0 END) AS unstamped, COALESCE(MAX(seq), 0) AS max_seq FROM audit_events`).Scan(&st)
					var marks struct{ Head, PrunedThrough int64 }
					a.db.Raw(`SELECT head, pruned_through FROM audit_feed WHERE id = 1`).Scan(&marks)
					logs := a.logs.String()
					t.Fatalf("the feed has %d events, want %d (next %s; audit_events %+v; audit_feed %+v; feed head %d)\nlast logs: %s",
						len(evs), scopedFill+scopedWant+3, next, st, marks, a.rt.Feed.Head(), logs[max(0, len(logs)-3000):])
				}
				scoped := a.createToken(`{"name": "team-a", "role": "runtime", "scopes": {"agents": ["team-a-*"]}}`)
				var got []string
				since := "0"
				for page := 1; len(got) < len(want); page++ {
					p := a.poll(fmt.Sprintf("/v1/events?wait_ms=0&limit=%d&since=%s", scopedLimit, since), scoped)
					if n := min(scopedLimit, len(want)-len(got)); len(p.Items) != n {
						b, _ := json.Marshal(p)
						t.Fatalf("page %d has %d events, want %d: %s", page, len(p.Items), n, b)
					}
					for _, e := range p.Items {
						got = append(got, e["agent"].(string))
					}
					since = p.Next
				}
				if !slices.Equal(got, want) {
					t.Fatalf("the scoped feed listed %v, want %v", got, want)
				}
				if p := a.poll("/v1/events?wait_ms=0&limit=10&since="+since, scoped); len(p.Items) != 0 {
					t.Fatalf("after the last in-scope event the feed listed %v", p.Items)
				}
			})
		})
	}
}
