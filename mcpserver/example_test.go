package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptd/promptd"
	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/mcpserver"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/sqlstore"
)

// A Go program serves its runtime's prompts to an MCP client in process:
// the server for env prod, connected over the SDK's in-memory transport.
func Example() {
	ctx := audit.WithActor(context.Background(), "example")
	dir, _ := os.MkdirTemp("", "promptd-mcp-example")
	defer os.RemoveAll(dir)
	rt, err := promptd.Open(ctx, sqlstore.Config{SQLitePath: filepath.Join(dir, "promptd.db")}, promptd.Options{Instance: "example"})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	if _, err := rt.Prompts.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "support",
		Config: json.RawMessage(`{"system": "You help {{customer}}.", "variables": {"customer": {"required": true, "description": "who asks"}}}`)}); err != nil {
		panic(err)
	}
	zero := int64(0)
	if _, err := rt.Prompts.SwitchPointer(ctx, promptstore.SwitchInput{Agent: "support", Env: "prod", Version: 1, ExpectedRevision: &zero}); err != nil {
		panic(err)
	}

	svc := mcpserver.New(rt, mcpserver.Options{})
	srv, err := svc.Server(ctx, &access.Token{Name: "local", Role: "runtime", Principal: "local"}, "prod")
	if err != nil {
		panic(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		panic(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()

	list, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		panic(err)
	}
	for _, p := range list.Prompts {
		for _, a := range p.Arguments {
			fmt.Printf("prompt %s: argument %s (%s), required %v\n", p.Name, a.Name, a.Description, a.Required)
		}
	}
	got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "support", Arguments: map[string]string{"customer": "Ada"}})
	if err != nil {
		panic(err)
	}
	for _, m := range got.Messages {
		fmt.Printf("%s: %q\n", m.Role, m.Content.(*mcp.TextContent).Text)
	}
	// Output:
	// prompt support: argument customer (who asks), required true
	// user: "[system]\nYou help Ada."
}
