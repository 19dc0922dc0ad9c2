package mcpserver_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/board"
	"github.com/promptd/promptd/mcpserver"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/session"
)

const supportConfig = `{"system": "You help {{customer}} in {{lang}}.",
	"messages": [{"role": "assistant", "content": "Hello {{customer}}!"}, {"role": "user", "content": "Order {{order}}"}],
	"variables": {"customer": {"required": true, "description": "the customer's name"},
		"lang": {"default": "English", "description": "the answer's language"},
		"order": {"description": "the order id"}}}`

func TestMCPPrompts_listAndGet(t *testing.T) {
	rt, ctx := open(t)
	v := publish(t, ctx, rt, "support", "prod", supportConfig)
	publish(t, ctx, rt, "other", "staging", `{"system": "elsewhere"}`) // not in prod
	cs := connect(t, ctx, mcpserver.New(rt, mcpserver.Options{}), admin, "prod", nil)

	list, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Prompts) != 1 || list.Prompts[0].Name != "support" {
		t.Fatalf("prompts = %+v, want support only", list.Prompts)
	}
	var args []string
	for _, a := range list.Prompts[0].Arguments {
		args = append(args, a.Name+" required="+map[bool]string{true: "yes", false: "no"}[a.Required]+" desc="+a.Description)
	}
	want := []string{"customer required=yes desc=the customer's name", `lang required=no desc=the answer's language; default "English"`,
		"order required=no desc=the order id"}
	if !slices.Equal(args, want) {
		t.Fatalf("arguments:\n%s\nwant\n%s", strings.Join(args, "\n"), strings.Join(want, "\n"))
	}

	got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "support", Arguments: map[string]string{"customer": "Ada", "order": "42"}})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, m := range got.Messages {
		msgs = append(msgs, string(m.Role)+": "+m.Content.(*mcp.TextContent).Text)
	}
	wantMsgs := []string{"user: [system]\nYou help Ada in English.", "assistant: Hello Ada!", "user: Order 42"}
	if !slices.Equal(msgs, wantMsgs) {
		t.Fatalf("messages = %q, want %q", msgs, wantMsgs)
	}
	if r, _ := json.Marshal(got.Meta["promptd/roles"]); string(r) != `["system","assistant","user"]` || got.Meta["promptd/version"] != float64(v) {
		t.Fatalf("meta = %v", got.Meta)
	}
}

func TestMCPPrompts_missingRequiredArgumentNamesIt(t *testing.T) {
	rt, ctx := open(t)
	publish(t, ctx, rt, "support", "prod", supportConfig)
	cs := connect(t, ctx, mcpserver.New(rt, mcpserver.Options{}), admin, "prod", nil)
	_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "support", Arguments: map[string]string{"order": "42"}})
	if err == nil || !strings.Contains(err.Error(), "missing_variable") || !strings.Contains(err.Error(), "customer") {
		t.Fatalf("err = %v, want missing_variable naming customer", err)
	}
}

func TestMCPPrompts_scopeFilters(t *testing.T) {
	rt, ctx := open(t)
	publish(t, ctx, rt, "team-a-bot", "prod", `{"system": "a"}`)
	publish(t, ctx, rt, "team-b-bot", "prod", `{"system": "b"}`)
	scoped := &access.Token{Name: "a-runtime", Role: "runtime", Principal: "a", Scopes: &access.Scopes{Agents: []string{"team-a-*"}}}
	svc := mcpserver.New(rt, mcpserver.Options{})
	cs := connect(t, ctx, svc, scoped, "prod", nil)
	list, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Prompts) != 1 || list.Prompts[0].Name != "team-a-bot" {
		t.Fatalf("scoped list = %+v, want team-a-bot only", list.Prompts)
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "team-b-bot"}); err == nil {
		t.Fatal("an out-of-scope agent was gettable")
	}
	// The control: an unscoped token lists both.
	all, err := connect(t, ctx, svc, admin, "prod", nil).ListPrompts(ctx, nil)
	if err != nil || len(all.Prompts) != 2 {
		t.Fatalf("unscoped list = %+v, %v", all, err)
	}
	// An env outside the token's scopes gets no server.
	envScoped := &access.Token{Name: "p", Role: "runtime", Principal: "p", Scopes: &access.Scopes{Envs: []string{"staging"}}}
	if _, err := svc.Server(ctx, envScoped, "prod"); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("server for an out-of-scope env: %v", err)
	}
}

func TestMCPPrompts_listChangedAfterPointerSwitch(t *testing.T) {
	rt, ctx := open(t)
	publish(t, ctx, rt, "support", "prod", `{"system": "one"}`)
	changed := make(chan struct{}, 16)
	cs := connect(t, ctx, mcpserver.New(rt, mcpserver.Options{}), admin, "prod", &mcp.ClientOptions{
		PromptListChangedHandler: func(_ context.Context, _ *mcp.PromptListChangedRequest) { changed <- struct{}{} }})
	if _, err := cs.ListPrompts(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// The feed position the server starts from may lag the commits just
	// made (the feed reads them within its poll): their notices arrive
	// now, before the switches this test times.
	for drained := false; !drained; {
		select {
		case <-changed:
		case <-time.After(500 * time.Millisecond):
			drained = true
		}
	}
	v2 := publish(t, ctx, rt, "support", "staging", `{"system": "two"}`) // another env: no notice expected
	select {
	case <-changed:
		t.Fatal("list_changed for a switch in another env")
	case <-time.After(700 * time.Millisecond):
	}
	start := time.Now()
	switchTo(t, ctx, rt, "support", "prod", v2)
	select {
	case <-changed:
		t.Logf("list_changed %v after the pointer switch", time.Since(start))
	case <-time.After(time.Second):
		t.Fatal("no list_changed within 1s of the pointer switch")
	}
	got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "support"})
	if err != nil || got.Messages[0].Content.(*mcp.TextContent).Text != mcpserver.SystemMarker+"two" {
		t.Fatalf("after the switch: %+v, %v", got, err)
	}
	start = time.Now()
	publish(t, ctx, rt, "newbie", "prod", `{"system": "new"}`) // a new agent
	select {
	case <-changed:
		t.Logf("list_changed %v after a new agent", time.Since(start))
	case <-time.After(time.Second):
		t.Fatal("no list_changed within 1s of a new agent")
	}
	list, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(list.Prompts) != 2 {
		t.Fatalf("after the new agent: %+v, %v", list, err)
	}
	// A release step: a release created for the env is one.
	v3, err := rt.Prompts.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "support", BaseVersion: v2, Config: json.RawMessage(`{"system": "three"}`)})
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if _, err := rt.Releases.Create(ctx, release.CreateInput{Agent: "support", Env: "prod", CandidateVersion: v3.Version, Percent: "100"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
		t.Logf("list_changed %v after a release started", time.Since(start))
	case <-time.After(time.Second):
		t.Fatal("no list_changed within 1s of a release")
	}
	// A caller without a user or session id (an MCP client) gets the
	// release's baseline.
	got, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "support"})
	if err != nil || got.Messages[0].Content.(*mcp.TextContent).Text != mcpserver.SystemMarker+"two" || got.Meta["promptd/version"] != float64(v2) {
		t.Fatalf("during the release: %+v, %v", got, err)
	}
}

// schemaOf is the tool's input schema as the client received it.
func schemaOf(t *testing.T, tools []*mcp.Tool, name string) map[string]any {
	t.Helper()
	for _, tl := range tools {
		if tl.Name == name {
			b, err := json.Marshal(tl.InputSchema)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	t.Fatalf("no tool %s", name)
	return nil
}

func TestMCPTools_schemasAreExact(t *testing.T) {
	rt, ctx := open(t)
	cs := connect(t, ctx, mcpserver.New(rt, mcpserver.Options{}), admin, "prod", nil)
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{ // required members, then every member
		mcpserver.ToolClaim:        {"board,holder", "board,holder,ttl_ms"},
		mcpserver.ToolHeartbeat:    {"board,fence,record_id", "board,fence,record_id,ttl_ms"},
		mcpserver.ToolComplete:     {"board,expected_revision,fence,record_id,state", "board,expected_revision,fence,payload,record_id,state"},
		mcpserver.ToolAcquireLease: {"holder,session_id", "holder,session_id,ttl_ms"},
		mcpserver.ToolAppendTurns:  {"expected_revision,fence,session_id,turns", "expected_revision,fence,session_id,turns"},
		mcpserver.ToolReleaseLease: {"lease_token,session_id", "lease_token,session_id"},
	}
	if len(tools.Tools) != len(want) {
		t.Fatalf("%d tools, want %d", len(tools.Tools), len(want))
	}
	var check func(path string, s map[string]any)
	check = func(path string, s map[string]any) {
		if _, ok := s["type"].(string); !ok {
			t.Errorf("%s: type %v is not one type", path, s["type"])
		}
		if s["type"] == "object" && !strings.HasSuffix(path, ".payload") { // a payload is any object
			if s["additionalProperties"] != false {
				t.Errorf("%s: additionalProperties = %v, want false", path, s["additionalProperties"])
			}
		}
		props, _ := s["properties"].(map[string]any)
		for k, p := range props {
			check(path+"."+k, p.(map[string]any))
		}
		if it, ok := s["items"].(map[string]any); ok {
			check(path+"[]", it)
		}
	}
	for name, w := range want {
		s := schemaOf(t, tools.Tools, name)
		check(name, s)
		var req []string
		for _, r := range s["required"].([]any) {
			req = append(req, r.(string))
		}
		slices.Sort(req)
		var all []string
		for k := range s["properties"].(map[string]any) {
			all = append(all, k)
		}
		slices.Sort(all)
		if strings.Join(req, ",") != w[0] || strings.Join(all, ",") != w[1] {
			t.Errorf("%s: required %v, members %v; want %v", name, req, all, w)
		}
	}
	turn := schemaOf(t, tools.Tools, mcpserver.ToolAppendTurns)["properties"].(map[string]any)["turns"].(map[string]any)["items"].(map[string]any)
	if r, _ := json.Marshal(turn["required"]); string(r) != `["role","content"]` {
		t.Errorf("turn required = %s", r)
	}
	// The SDK validates against the schema: an unknown member is refused
	// before the handler runs.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.ToolClaim, Arguments: map[string]any{"board": "b", "holder": "h", "color": "red"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "color") {
		t.Fatalf("an unknown member: %+v", res)
	}
	// And a missing required one.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.ToolClaim, Arguments: map[string]any{"board": "b"}})
	if err != nil || !res.IsError {
		t.Fatalf("a missing member: %+v, %v", res, err)
	}
}

// call calls a tool and decodes its structured content into out (nil:
// the result must be an error, whose problem is returned).
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) map[string]any {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if out == nil {
		if !res.IsError {
			t.Fatalf("%s: %s, want a tool error", name, b)
		}
		var p map[string]any
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if res.IsError {
		t.Fatalf("%s: tool error %s", name, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	return nil
}

func TestMCPTools_claimHeartbeatComplete(t *testing.T) {
	rt, ctx := open(t)
	if _, _, err := rt.Boards.Create(ctx, "jobs", board.RecordInput{ID: "job-1", Payload: []byte(`{"url": "https://example.com"}`)}); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, ctx, mcpserver.New(rt, mcpserver.Options{}), admin, "prod", nil)
	var c mcpserver.Claimed
	call(t, cs, mcpserver.ToolClaim, map[string]any{"board": "jobs", "holder": "worker-1", "ttl_ms": 10000}, &c)
	if !c.Claimed || c.RecordID != "job-1" || c.Fence < 1 || c.ClaimExpiresAt == nil || string(c.Payload) != `{"url":"https://example.com"}` {
		t.Fatalf("claim = %+v", c)
	}
	var hb mcpserver.Heartbeat
	call(t, cs, mcpserver.ToolHeartbeat, map[string]any{"board": "jobs", "record_id": "job-1", "fence": c.Fence, "ttl_ms": 20000}, &hb)
	if hb.ClaimTTLMs != 20000 || hb.ClaimExpiresAt == nil {
		t.Fatalf("heartbeat = %+v", hb)
	}
	p := call(t, cs, mcpserver.ToolHeartbeat, map[string]any{"board": "jobs", "record_id": "job-1", "fence": c.Fence + 1}, nil)
	if p["code"] != "stale_fence" {
		t.Fatalf("heartbeat with another fence: %v", p)
	}
	var done mcpserver.Completed
	call(t, cs, mcpserver.ToolComplete, map[string]any{"board": "jobs", "record_id": "job-1", "fence": c.Fence,
		"expected_revision": hb.Revision, "state": "running"}, &done)
	p = call(t, cs, mcpserver.ToolComplete, map[string]any{"board": "jobs", "record_id": "job-1", "fence": c.Fence,
		"expected_revision": hb.Revision, "state": "done"}, nil)
	if p["code"] != "revision_conflict" {
		t.Fatalf("complete at an old revision: %v", p)
	}
	call(t, cs, mcpserver.ToolComplete, map[string]any{"board": "jobs", "record_id": "job-1", "fence": c.Fence,
		"expected_revision": done.Revision, "state": "done", "payload": map[string]any{"ok": true}}, &done)
	r, err := rt.Boards.Get(ctx, "jobs", "job-1")
	if err != nil || r.State != "done" || string(r.Payload) != `{"ok":true}` {
		t.Fatalf("record = %+v, %v", r, err)
	}
	var none mcpserver.Claimed
	call(t, cs, mcpserver.ToolClaim, map[string]any{"board": "jobs", "holder": "worker-1"}, &none)
	if none.Claimed {
		t.Fatalf("a second claim on an empty board: %+v", none)
	}
	// A token scoped to other boards touches none of this one.
	scoped := &access.Token{Name: "other", Role: "runtime", Principal: "o", Scopes: &access.Scopes{Boards: []string{"other-*"}}}
	p = call(t, connect(t, ctx, mcpserver.New(rt, mcpserver.Options{}), scoped, "prod", nil), mcpserver.ToolClaim,
		map[string]any{"board": "jobs", "holder": "w"}, nil)
	if p["code"] != "forbidden" || p["scope"] != "boards" {
		t.Fatalf("out-of-scope claim: %v", p)
	}
}

func TestMCPTools_sessionAppendUnderLease(t *testing.T) {
	rt, ctx := open(t)
	publish(t, ctx, rt, "support", "prod", `{"system": "s"}`)
	if _, _, err := rt.Sessions.Create(ctx, session.CreateInput{SessionID: "chat-1", Agent: "support", Env: "prod"}); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, ctx, mcpserver.New(rt, mcpserver.Options{}), admin, "prod", nil)
	var l mcpserver.SessionLease
	call(t, cs, mcpserver.ToolAcquireLease, map[string]any{"session_id": "chat-1", "holder": "a", "ttl_ms": 10000}, &l)
	turns := []map[string]any{{"role": "user", "content": "hi"}}
	var app struct {
		Revision int64   `json:"revision"`
		Seqs     []int64 `json:"seqs"`
	}
	call(t, cs, mcpserver.ToolAppendTurns, map[string]any{"session_id": "chat-1", "fence": l.Fence, "expected_revision": l.Revision, "turns": turns}, &app)
	if app.Revision != l.Revision+1 || len(app.Seqs) != 1 {
		t.Fatalf("append = %+v", app)
	}
	// Another holder takes the lease over: the first one's fence is stale.
	l2, err := rt.Sessions.AcquireLease(ctx, "chat-1", session.LeaseInput{Holder: "b", Mode: "preempt", TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p := call(t, cs, mcpserver.ToolAppendTurns, map[string]any{"session_id": "chat-1", "fence": l.Fence, "expected_revision": app.Revision, "turns": turns}, nil)
	if p["code"] != "stale_fence" {
		t.Fatalf("append with a stale fence: %v", p)
	}
	p = call(t, cs, mcpserver.ToolAcquireLease, map[string]any{"session_id": "chat-1", "holder": "a"}, nil)
	if p["code"] != "lease_held" {
		t.Fatalf("acquire while held: %v", p)
	}
	var rel map[string]bool
	call(t, cs, mcpserver.ToolReleaseLease, map[string]any{"session_id": "chat-1", "lease_token": l2.Token}, &rel)
	s, err := rt.Sessions.Get(ctx, "chat-1", 0, 10)
	if err != nil || s.TurnCount != 1 || s.Lease != nil {
		t.Fatalf("session = %+v, %v", s, err)
	}
	// A token scoped to another agent cannot touch the session.
	scoped := &access.Token{Name: "other", Role: "runtime", Principal: "o", Scopes: &access.Scopes{Agents: []string{"billing"}}}
	p = call(t, connect(t, ctx, mcpserver.New(rt, mcpserver.Options{}), scoped, "prod", nil), mcpserver.ToolAcquireLease,
		map[string]any{"session_id": "chat-1", "holder": "x"}, nil)
	if p["code"] != "forbidden" {
		t.Fatalf("out-of-scope session: %v", p)
	}
}
