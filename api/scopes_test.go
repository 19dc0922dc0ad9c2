package api_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestScopes_scopedRuntime_cannotReachAnotherTeamsAgents: a runtime token
// scoped to team-a cannot read, resolve, assemble, open a session for or
// stream team-b's agents; lists and the feed omit them.
func TestScopes_scopedRuntime_cannotReachAnotherTeamsAgents(t *testing.T) {
	a := sqliteApp(t)
	for _, agent := range []string{"team-a-bot", "team-b-bot"} {
		a.createVersion(agent, 0, "v1")
		a.publish(agent, "prod", 1, 0)
	}
	tok := a.createToken(`{"name": "team-a-runtime", "role": "runtime", "scopes": {"agents": ["team-a-*"], "envs": ["prod"]}}`)
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/agents/team-b-bot/versions", ""},
		{"GET", "/v1/agents/team-b-bot/versions/1", ""},
		{"GET", "/v1/agents/team-b-bot/envs/prod", ""},
		{"GET", "/v1/agents/team-b-bot/envs/prod/prompt?user_id=u1", ""},
		{"POST", "/v1/agents/team-b-bot/envs/prod/assemble", `{"variables": {}}`},
		{"GET", "/v1/agents/team-a-bot/envs/staging/prompt", ""}, // env out of scope
		{"POST", "/v1/sessions", `{"agent": "team-b-bot", "env": "prod"}`},
		{"GET", "/v1/boards/any/records", ""}, // boards omitted: every board
	} {
		rec := a.do(c.method, c.path, tok, c.body)
		if strings.Contains(c.path, "/boards/") {
			if rec.Code == 403 {
				t.Errorf("%s %s: boards omitted from the scopes means all, got 403", c.method, c.path)
			}
			continue
		}
		p := problem(t, rec, 403, "forbidden")
		if p["scope"] != "agents" && p["scope"] != "envs" {
			t.Errorf("%s %s: scope = %v", c.method, c.path, p["scope"])
		}
	}
	a.ok(a.do("GET", "/v1/agents/team-a-bot/envs/prod/prompt?user_id=u1", tok, ""), 200)
	sess := a.ok(a.do("POST", "/v1/sessions", tok, `{"agent": "team-a-bot", "env": "prod"}`), 201)
	a.ok(a.do("GET", "/v1/sessions/"+sess["session_id"].(string), tok, ""), 200)

	agents := a.ok(a.do("GET", "/v1/agents", tok, ""), 200)["items"].([]any)
	if len(agents) != 1 || agents[0].(map[string]any)["agent"] != "team-a-bot" {
		t.Fatalf("agents = %v", agents)
	}

	// The feed (long-poll and stream) carries team-a's events only.
	poll := a.ok(a.do("GET", "/v1/events?since=0&wait_ms=0", tok, ""), 200)
	for _, e := range poll["items"].([]any) {
		if e.(map[string]any)["agent"] != "team-a-bot" {
			t.Errorf("long-poll shows %v", e)
		}
	}
	if len(poll["items"].([]any)) == 0 {
		t.Fatal("long-poll shows nothing of team-a")
	}
	srv := httptest.NewServer(a.h)
	defer srv.Close()
	r, _ := http.NewRequest("GET", srv.URL+"/v1/events?since=0", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	r.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	a.createVersion("team-b-bot", 1, "v2")
	a.createVersion("team-a-bot", 1, "v2")
	for {
		e, ok := readSSE(t, sc)
		if !ok {
			t.Fatal("stream ended")
		}
		var body map[string]any
		_ = json.Unmarshal([]byte(e.data), &body)
		if body["agent"] != "team-a-bot" {
			t.Fatalf("stream shows %s %v", e.event, body)
		}
		if body["action"] == "version.created" && body["details"].(map[string]any)["version"] == float64(2) {
			break // team-a's v2 came; team-b's, committed before it, was not shown
		}
	}
}

// TestScopes_revokedToken_endsItsStreamWithinASecond: revoking a managed
// token closes its open event stream (and its next request is 401).
func TestScopes_revokedToken_endsItsStreamWithinASecond(t *testing.T) {
	a := sqliteApp(t)
	tok := a.createToken(`{"name": "watcher", "role": "runtime"}`)
	srv := httptest.NewServer(a.h)
	defer srv.Close()
	r, _ := http.NewRequest("GET", srv.URL+"/v1/events", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	r.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("stream: %d", res.StatusCode)
	}
	ended := make(chan time.Time, 1)
	go func() {
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
		}
		ended <- time.Now()
	}()
	time.Sleep(100 * time.Millisecond)
	revoked := time.Now()
	if rec := a.do("DELETE", "/v1/tokens/watcher", admin, ""); rec.Code != 204 {
		t.Fatalf("revoke: %d", rec.Code)
	}
	select {
	case at := <-ended:
		t.Logf("stream closed %v after the revocation", at.Sub(revoked))
	case <-time.After(time.Second):
		t.Fatal("the stream outlived its token's revocation by 1 s")
	}
	problem(t, a.do("GET", "/v1/events?wait_ms=0", tok, ""), 401, "unauthorized")
}

// A scoped runtime token's bundle holds only its team's agents and envs;
// naming another team's agent or env is 403; its exposures and outcomes
// must name what it may see.
func TestScopes_scopedRuntime_bundleAndExposuresStayInItsScope(t *testing.T) {
	a := sqliteApp(t)
	for _, agent := range []string{"team-a-bot", "team-b-bot"} {
		a.createVersion(agent, 0, "v1")
		a.publish(agent, "prod", 1, 0)
		a.publish(agent, "staging", 1, 0)
	}
	tok := a.createToken(`{"name": "team-a-runtime", "role": "runtime", "scopes": {"agents": ["team-a-*"], "envs": ["prod"]}}`)
	b := a.ok(a.do("GET", "/v1/bundle", tok, ""), 200)
	agents := b["agents"].(map[string]any)
	if len(agents) != 1 || agents["team-a-bot"] == nil {
		t.Fatalf("the scoped bundle holds %v, want team-a-bot only", agents)
	}
	if envs := agents["team-a-bot"].(map[string]any)["envs"].(map[string]any); len(envs) != 1 || envs["prod"] == nil {
		t.Fatalf("the scoped bundle's envs %v, want prod only", envs)
	}
	// control: an unscoped runtime token sees both teams
	if all := a.ok(a.do("GET", "/v1/bundle", runtime, ""), 200)["agents"].(map[string]any); len(all) != 2 {
		t.Fatalf("the unscoped bundle holds %d agents, want 2", len(all))
	}
	for _, q := range []string{"?agents=team-b-bot", "?envs=staging", "?agents=team-a-bot,team-b-bot"} {
		problem(t, a.do("GET", "/v1/bundle"+q, tok, ""), 403, "forbidden")
	}
	at := time.Now().UTC().Format(time.RFC3339)
	rec := a.do("POST", "/v1/exposures", tok, `{"items": [{"agent": "team-b-bot", "env": "prod", "version": 1, "count": 1, "at": "`+at+`"}]}`,
		"Idempotency-Key", "scoped-exposure-1")
	problem(t, rec, 403, "forbidden")
	a.ok(a.do("POST", "/v1/exposures", tok, `{"items": [{"agent": "team-a-bot", "env": "prod", "version": 1, "count": 1, "at": "`+at+`"}]}`,
		"Idempotency-Key", "scoped-exposure-2"), 200)
	problem(t, a.do("GET", "/v1/agents/team-b-bot/envs/prod/exposures", tok, ""), 403, "forbidden")
}
