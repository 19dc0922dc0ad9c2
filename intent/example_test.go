package intent_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/promptd/promptd/intent"
	"github.com/promptd/promptd/sqlstore"
)

// Two agents about to import overlapping rows of one board: the second
// learns of the first before it writes anything.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "intent-example")
	defer os.RemoveAll(dir)
	db, _ := sqlstore.Open(ctx, sqlstore.Config{SQLitePath: filepath.Join(dir, "promptd.db")})
	defer sqlstore.Close(db)
	_ = sqlstore.Migrate(ctx, db, migrations()...)
	s := intent.New(intent.Options{DB: db, Instance: "example"})

	a, _ := s.Register(ctx, intent.Input{Holder: "importer-a", Description: "EU customers",
		Scope: intent.Scope{Records: []intent.RecordScope{{Board: "crm", Prefixes: []string{"eu-"}}}}})
	fmt.Println(a.Intent.State, a.Intent.Mode, a.Intent.Fence)

	_, err := s.Register(ctx, intent.Input{Holder: "importer-b",
		Scope: intent.Scope{Records: []intent.RecordScope{{Board: "crm", IDs: []string{"eu-42"}}}}})
	var c *intent.Conflict
	if errors.As(err, &c) {
		fmt.Println("refused: held by", c.Intents[0].Holder)
	}
	_, _ = s.Release(ctx, a.Intent.ID, a.Intent.Fence)
	// Output:
	// active exclusive 1
	// refused: held by importer-a
}
