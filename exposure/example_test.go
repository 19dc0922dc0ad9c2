package exposure_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/promptd/promptd/exposure"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/sqlstore"
)

// Exposures reported by SDKs and counted by the server add up per minute.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "exposure-example")
	defer os.RemoveAll(dir)
	db, _ := sqlstore.Open(ctx, sqlstore.Config{SQLitePath: filepath.Join(dir, "promptd.db")})
	defer sqlstore.Close(db)
	_ = sqlstore.Migrate(ctx, db, exposure.Migrations()...)

	now := time.Now()
	s := exposure.New(exposure.Options{DB: db})
	res, _ := s.Record(ctx, []exposure.Item{
		{Agent: "support", Env: "prod", Version: 2, ReleaseID: "rel_1", Arm: "candidate", Count: 40, At: now},
		{Agent: "support", Env: "prod", Version: 2, ReleaseID: "rel_1", Arm: "candidate", Count: 2, At: now},
	})
	s.Count("support", "prod", 2, "rel_1", "candidate") // the server's own resolve
	_ = s.Flush(ctx)

	rows, _, _ := s.List(ctx, exposure.ListInput{Agent: "support", Env: "prod", From: now.Add(-time.Hour), To: now.Add(time.Minute),
		Page: promptstore.Page{Limit: 10}})
	fmt.Println("accepted", res.Accepted)
	for _, r := range rows {
		fmt.Println(r.ReleaseID, r.Version, r.Arm, r.Count)
	}
	// Output:
	// accepted 2
	// rel_1 2 candidate 43
}
