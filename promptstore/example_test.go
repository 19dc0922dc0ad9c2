package promptstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/sqlstore"
)

// A Go program publishes a version, points an env at it and assembles the
// prompt, all in process on SQLite.
func Example() {
	ctx := audit.WithActor(context.Background(), "example")
	dir, _ := os.MkdirTemp("", "promptstore-example")
	defer os.RemoveAll(dir)
	db, err := sqlstore.Open(ctx, sqlstore.Config{SQLitePath: filepath.Join(dir, "promptd.db")})
	if err != nil {
		panic(err)
	}
	defer sqlstore.Close(db)
	if err := sqlstore.Migrate(ctx, db, append(audit.Migrations(), promptstore.Migrations()...)...); err != nil {
		panic(err)
	}
	store := promptstore.New(db, promptstore.Options{Instance: "example"})
	defer store.Close()

	v, err := store.CreateVersion(ctx, promptstore.CreateVersionInput{
		Agent: "support", BaseVersion: 0, Message: "first",
		Config: json.RawMessage(`{"system": "You are {{persona}} for {{company}}.",
			"skills": [{"name": "refunds", "instructions": "Refunds within {{days}} days."}],
			"variables": {"persona": {"required": true}, "company": {"default": "ACME"}, "days": {"default": "30"}}}`),
	})
	if err != nil {
		panic(err)
	}
	created := int64(0) // expected revision 0 creates the pointer
	if _, err := store.SwitchPointer(ctx, promptstore.SwitchInput{Agent: "support", Env: "prod", Version: v.Version, ExpectedRevision: &created}); err != nil {
		panic(err)
	}
	out, err := store.Assemble(ctx, store, nil, promptstore.AssembleInput{
		Request:   promptstore.Request{Agent: "support", Env: "prod", UserID: "user-1"},
		Variables: map[string]json.RawMessage{"persona": json.RawMessage(`"a helpful agent"`)},
	})
	if err != nil {
		panic(err)
	}
	var system string
	_ = json.Unmarshal(out.Messages[0].Content, &system)
	fmt.Println("version", out.Version)
	fmt.Println(system)
	// Output:
	// version 1
	// You are a helpful agent for ACME.
	//
	// # Skills
	//
	// ## refunds
	// Refunds within 30 days.
}
