package mcpserver_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptd/promptd"
	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/mcpserver"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/sqlstore"
)

// open is a runtime on a fresh SQLite file.
func open(t *testing.T) (*promptd.Runtime, context.Context) {
	t.Helper()
	ctx := audit.WithActor(context.Background(), "test")
	rt, err := promptd.Open(ctx, sqlstore.Config{SQLitePath: filepath.Join(t.TempDir(), "promptd.db")}, promptd.Options{Instance: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	return rt, ctx
}

// publish creates a version of agent with config and points env at it.
func publish(t *testing.T, ctx context.Context, rt *promptd.Runtime, agent, env, config string) int {
	t.Helper()
	latest := 0
	if a, _, err := rt.Prompts.ListVersions(ctx, agent, promptstore.Page{Limit: 1}); err == nil && len(a) > 0 {
		latest = a[0].Version
	}
	v, err := rt.Prompts.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: agent, BaseVersion: latest, Config: json.RawMessage(config)})
	if err != nil {
		t.Fatal(err)
	}
	switchTo(t, ctx, rt, agent, env, v.Version)
	return v.Version
}

func switchTo(t *testing.T, ctx context.Context, rt *promptd.Runtime, agent, env string, version int) {
	t.Helper()
	var rev int64
	if e, err := rt.Prompts.GetEnv(ctx, agent, env); err == nil {
		rev = e.Revision
	}
	if _, err := rt.Prompts.SwitchPointer(ctx, promptstore.SwitchInput{Agent: agent, Env: env, Version: version, ExpectedRevision: &rev}); err != nil {
		t.Fatal(err)
	}
}

// connect connects a go-sdk client to a server of svc for t on env over
// the in-memory transport.
func connect(t *testing.T, ctx context.Context, svc *mcpserver.Service, tok *access.Token, env string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	srv, err := svc.Server(ctx, tok, env)
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

var admin = &access.Token{Name: "admin", Role: "admin", Principal: "admin", Bootstrap: true}
