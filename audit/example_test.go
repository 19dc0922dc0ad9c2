package audit_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/sqlstore"
)

// An event is appended in the transaction of the change it records and
// read back with a filter.
func Example() {
	ctx := audit.WithActor(context.Background(), "ops")
	dir, _ := os.MkdirTemp("", "audit-example")
	defer os.RemoveAll(dir)
	db, _ := sqlstore.Open(ctx, sqlstore.Config{SQLitePath: filepath.Join(dir, "a.db")})
	defer sqlstore.Close(db)
	_ = sqlstore.Migrate(ctx, db, audit.Migrations()...)

	log := audit.Log{Instance: "promptd-1"}
	_ = log.Append(ctx, db, audit.Event{Action: "version.created", Agent: "support", Resource: "agents/support/versions/1"},
		map[string]any{"version": 1})
	events, _, _ := audit.List(ctx, db, audit.Filter{Agent: "support", Limit: 10})
	for _, e := range events {
		fmt.Println(e.Actor, e.Instance, e.Action, e.Resource, string(e.Details))
	}
	// Output:
	// ops promptd-1 version.created agents/support/versions/1 {"version":1}
}
