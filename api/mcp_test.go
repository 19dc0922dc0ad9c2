package api_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"gorm.io/gorm"

	"github.com/promptd/promptd/api"
	"github.com/promptd/promptd/internal/harness/testenv"

	"github.com/promptd/promptd/mcpserver"
)

// bearer adds a token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// mcpConnect connects go-sdk's client to url over streamable HTTP with token.
func mcpConnect(t *testing.T, url, token string, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "api-test", Version: "1"}, opts).Connect(t.Context(), tr, nil)
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

func TestMCPHTTP_promptsOverStreamableHTTP_andListChangedAfterAPointerSwitch(t *testing.T) {
	a := sqliteApp(t)
	srv := httptest.NewServer(a.h)
	t.Cleanup(srv.Close) // after the client sessions close (cleanups run last first)
	a.ok(a.do("POST", "/v1/agents/support/versions", admin, `{"base_version": 0, "message": "m", "config": {"system": "You help {{customer}}.",
		"variables": {"customer": {"required": true, "description": "who asks"}}}}`), 201)
	a.publish("support", "prod", 1, 0)
	v2 := a.createVersion("support", 1, "You are brief.")
	changed := make(chan struct{}, 8)
	cs, err := mcpConnect(t, srv.URL+"/v1/mcp/prod", runtime, &mcp.ClientOptions{
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { changed <- struct{}{} }})
	if err != nil {
		t.Fatal(err)
	}
	list, err := cs.ListPrompts(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Prompts) != 1 || list.Prompts[0].Name != "support" || len(list.Prompts[0].Arguments) != 1 ||
		list.Prompts[0].Arguments[0].Name != "customer" || !list.Prompts[0].Arguments[0].Required || list.Prompts[0].Arguments[0].Description != "who asks" {
		t.Fatalf("prompts = %+v", list.Prompts)
	}
	got, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "support", Arguments: map[string]string{"customer": "Ada"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Messages) != 1 || got.Messages[0].Content.(*mcp.TextContent).Text != mcpserver.SystemMarker+"You help Ada." {
		t.Fatalf("messages = %+v", got.Messages)
	}
	if _, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "support"}); err == nil || !strings.Contains(err.Error(), "missing_variable") {
		t.Fatalf("without its required argument: %v", err)
	}
	time.Sleep(200 * time.Millisecond) // the GET stream is open
	start := time.Now()
	a.publish("support", "prod", v2, 1)
	select {
	case <-changed:
		t.Logf("list_changed %v after the pointer switch", time.Since(start))
	case <-time.After(time.Second):
		t.Fatal("no list_changed within 1s of the pointer switch")
	}
	got, err = cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "support"})
	if err != nil || got.Messages[0].Content.(*mcp.TextContent).Text != mcpserver.SystemMarker+"You are brief." {
		t.Fatalf("after the switch: %+v, %v", got, err)
	}
}

func TestMCPHTTP_scopedToken_seesAndTouchesOnlyItsScopes(t *testing.T) {
	a := sqliteApp(t)
	srv := httptest.NewServer(a.h)
	t.Cleanup(srv.Close) // after the client sessions close (cleanups run last first)
	for _, agent := range []string{"team-a-bot", "team-b-bot"} {
		a.createVersion(agent, 0, "v1")
		a.publish(agent, "prod", 1, 0)
	}
	a.ok(a.do("POST", "/v1/boards/team-b-board/records", runtime, `{"payload": {}}`), 201)
	scoped := a.createToken(`{"name": "team-a", "role": "runtime", "scopes": {"agents": ["team-a-*"], "envs": ["prod"], "boards": ["team-a-*"]}}`)
	cs, err := mcpConnect(t, srv.URL+"/v1/mcp/prod", scoped, nil)
	if err != nil {
		t.Fatal(err)
	}
	list, err := cs.ListPrompts(t.Context(), nil)
	if err != nil || len(list.Prompts) != 1 || list.Prompts[0].Name != "team-a-bot" {
		t.Fatalf("scoped list = %+v, %v", list, err)
	}
	if _, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "team-b-bot"}); err == nil {
		t.Fatal("an out-of-scope agent was gettable")
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: mcpserver.ToolClaim, Arguments: map[string]any{"board": "team-b-board", "holder": "w"}})
	if err != nil || !res.IsError || !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "forbidden:") {
		t.Fatalf("claim on an out-of-scope board: %+v, %v", res, err)
	}
	// The control: the unscoped runtime token sees both and claims.
	all, err := mcpConnect(t, srv.URL+"/v1/mcp/prod", runtime, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l, err := all.ListPrompts(t.Context(), nil); err != nil || len(l.Prompts) != 2 {
		t.Fatalf("unscoped list = %+v, %v", l, err)
	}
	res, err = all.CallTool(t.Context(), &mcp.CallToolParams{Name: mcpserver.ToolClaim, Arguments: map[string]any{"board": "team-b-board", "holder": "w"}})
	if err != nil || res.IsError {
		t.Fatalf("unscoped claim: %+v, %v", res, err)
	}
	// An env outside the scopes is refused at the route; no token at all too.
	if _, err := mcpConnect(t, srv.URL+"/v1/mcp/staging", scoped, nil); err == nil {
		t.Fatal("connected to an out-of-scope env")
	}
	r := a.do("POST", "/v1/mcp/staging", scoped, `{}`)
	problem(t, r, http.StatusForbidden, "forbidden")
	problem(t, a.do("POST", "/v1/mcp/prod", "", `{}`), http.StatusUnauthorized, "unauthorized")
}

func TestMCPHTTP_aSessionIsBoundToTheTokenThatOpenedIt(t *testing.T) {
	a := sqliteApp(t)
	srv := httptest.NewServer(a.h)
	t.Cleanup(srv.Close) // after the client sessions close (cleanups run last first)
	init := `{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}`
	post := func(token, session, body string) *http.Response {
		r, _ := http.NewRequest("POST", srv.URL+"/v1/mcp/prod", strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+token)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			r.Header.Set("Mcp-Session-Id", session)
			r.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		res, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = res.Body.Close() })
		return res
	}
	res := post(runtime, "", init)
	id := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != 200 || id == "" {
		t.Fatalf("initialize: %d, session %q", res.StatusCode, id)
	}
	list := `{"jsonrpc": "2.0", "id": 2, "method": "prompts/list", "params": {}}`
	if res := post(admin, id, list); res.StatusCode != http.StatusForbidden && res.StatusCode != http.StatusNotFound && res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("another token on the session: %d", res.StatusCode)
	}
	if res := post(runtime, id, list); res.StatusCode != 200 {
		t.Fatalf("the session's own token: %d", res.StatusCode)
	}
}

func TestMCPHTTP_aServerStreamEndsWhenItsTokenIsRevoked(t *testing.T) {
	a := sqliteApp(t)
	srv := httptest.NewServer(a.h)
	t.Cleanup(srv.Close)
	secret := a.createToken(`{"name": "ide", "role": "runtime"}`)
	send := func(method, session, body string) *http.Response {
		r, _ := http.NewRequest(method, srv.URL+"/v1/mcp/prod", strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+secret)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if method == http.MethodGet {
			r.Header.Set("Accept", "text/event-stream")
		}
		if session != "" {
			r.Header.Set("Mcp-Session-Id", session)
			r.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		res, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = res.Body.Close() })
		return res
	}
	res := send(http.MethodPost, "", `{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}`)
	id := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != 200 || id == "" {
		t.Fatalf("initialize: %d", res.StatusCode)
	}
	send(http.MethodPost, id, `{"jsonrpc": "2.0", "method": "notifications/initialized"}`)
	stream := send(http.MethodGet, id, "")
	if stream.StatusCode != 200 {
		t.Fatalf("GET stream: %d", stream.StatusCode)
	}
	ended := make(chan time.Time, 1)
	go func() {
		_, _ = io.Copy(io.Discard, stream.Body)
		ended <- time.Now()
	}()
	select {
	case <-ended:
		t.Fatal("the stream ended before the revocation")
	case <-time.After(300 * time.Millisecond):
	}
	revoked := time.Now()
	if rec := a.do("DELETE", "/v1/tokens/ide", admin, ""); rec.Code != http.StatusNoContent {
		t.Fatalf("revoke: %d", rec.Code)
	}
	select {
	case at := <-ended:
		t.Logf("the stream ended %v after the revocation", at.Sub(revoked))
	case <-time.After(3 * time.Second):
		t.Fatal("the stream outlived its token's revocation by 3s")
	}
}

// PROMPTD_MCP=false: every MCP route answers 404 not_found (after
// authentication); the control is the same request on a server with MCP on.
func TestMCPHTTP_turnedOff_answers404(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		off := newApp(t, db, func(c *api.Config) { c.MCPOff = true })
		body := `{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}`
		for _, m := range []string{"GET", "POST", "DELETE"} {
			problem(t, off.do(m, "/v1/mcp/prod", runtime, body), 404, "not_found")
		}
		problem(t, off.do("POST", "/v1/mcp/prod", "", body), 401, "unauthorized")
		on := newApp(t, db)
		if rec := on.do("POST", "/v1/mcp/prod", runtime, body, "Accept", "application/json, text/event-stream"); rec.Code != 200 {
			t.Fatalf("MCP on: initialize = %d %s", rec.Code, rec.Body)
		}
	})
}
