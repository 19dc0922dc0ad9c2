package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptd/promptd/api/client"
	"github.com/promptd/promptd/mcpserver"
)

// promptctlBinary builds promptctl once per test run.
func promptctlBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "promptctl")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestMCPStdio_bridgesALocalClientToPromptd runs `promptctl mcp` as a
// local MCP client (go-sdk's CommandTransport) would, against a real
// promptd: prompts, a tool call and a list_changed all cross the bridge.
func TestMCPStdio_bridgesALocalClientToPromptd(t *testing.T) {
	s := startPromptd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := s.admin.CreateVersion(ctx, "support", client.CreateVersionRequest{Config: json.RawMessage(
		`{"system": "You help {{customer}}.", "variables": {"customer": {"required": true, "description": "who asks"}}}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.admin.PutEnv(ctx, "support", "prod", client.PutEnvRequest{Version: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.admin.CreateVersion(ctx, "support", client.CreateVersionRequest{BaseVersion: 1, Config: json.RawMessage(`{"system": "You are brief."}`)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.admin.CreateRecord(ctx, "jobs", client.NewRecord{ID: "job-1", Payload: map[string]any{"n": 1}}); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(promptctlBinary(t), "mcp", "--env", "prod")
	cmd.Env = append(os.Environ(), "PROMPTD_URL="+s.p.URL, "PROMPTD_TOKEN="+runtimeSecret)
	cmd.Stderr = os.Stderr
	changed := make(chan struct{}, 8)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, &mcp.ClientOptions{
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { changed <- struct{}{} }}).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	list, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Prompts) != 1 || list.Prompts[0].Name != "support" || !list.Prompts[0].Arguments[0].Required {
		t.Fatalf("prompts = %+v", list.Prompts)
	}
	got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "support", Arguments: map[string]string{"customer": "Ada"}})
	if err != nil || got.Messages[0].Content.(*mcp.TextContent).Text != mcpserver.SystemMarker+"You help Ada." {
		t.Fatalf("get = %+v, %v", got, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.ToolClaim, Arguments: map[string]any{"board": "jobs", "holder": "ide"}})
	if err != nil || res.IsError {
		t.Fatalf("claim = %+v, %v", res, err)
	}
	var c mcpserver.Claimed
	if b, _ := json.Marshal(res.StructuredContent); json.Unmarshal(b, &c) != nil || !c.Claimed || c.RecordID != "job-1" {
		t.Fatalf("claim = %s", b)
	}
	time.Sleep(500 * time.Millisecond) // the bridge's stream is open; earlier notices drained
	for len(changed) > 0 {
		<-changed
	}
	start := time.Now()
	if _, err := s.admin.PutEnv(ctx, "support", "prod", client.PutEnvRequest{Version: 2, ExpectedRevision: 1}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
		t.Logf("list_changed through promptctl mcp %v after the pointer switch", time.Since(start))
	case <-time.After(time.Second):
		t.Fatal("no list_changed within 1s of the pointer switch")
	}
}
