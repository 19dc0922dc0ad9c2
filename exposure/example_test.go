package exposure_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/exposure"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/sqlstore"
)

// Exposures reported by SDKs and counted by the server add up per minute;
// a report of what was not served (here a version the env never had) is
// refused whole.
func Example() {
	ctx := audit.WithActor(context.Background(), "example")
	dir, _ := os.MkdirTemp("", "exposure-example")
	defer os.RemoveAll(dir)
	db, _ := sqlstore.Open(ctx, sqlstore.Config{SQLitePath: filepath.Join(dir, "promptd.db")})
	defer sqlstore.Close(db)
	_ = sqlstore.Migrate(ctx, db, append(append(append(audit.Migrations(), promptstore.Migrations()...), release.Migrations()...),
		exposure.Migrations()...)...)
	locker := locks.NewMemory(locks.Options{Holder: "example"})
	store := promptstore.New(db, promptstore.Options{Instance: "example", Locker: locker})
	defer store.Close()
	for i := range 2 {
		_, _ = store.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "support", BaseVersion: i,
			Config: json.RawMessage(fmt.Sprintf(`{"system": "v%d"}`, i+1))})
	}
	zero := int64(0)
	_, _ = store.SwitchPointer(ctx, promptstore.SwitchInput{Agent: "support", Env: "prod", Version: 1, ExpectedRevision: &zero})
	releases := release.New(release.Options{Store: store, DB: db, Locker: locker, Instance: "example"})
	rel, _ := releases.Create(ctx, release.CreateInput{Agent: "support", Env: "prod", CandidateVersion: 2, Percent: "10"})

	now := time.Now()
	// one clock for the items and the server's own count: across a minute's
	// end they would be counted in two minutes
	s := exposure.New(exposure.Options{DB: db, Releases: releases, Envs: store, Now: func() time.Time { return now }})
	res, _ := s.Record(ctx, []exposure.Item{
		{Agent: "support", Env: "prod", Version: 2, ReleaseID: rel.ID, Arm: "candidate", Count: 40, At: now},
		{Agent: "support", Env: "prod", Version: 2, ReleaseID: rel.ID, Arm: "candidate", Count: 2, At: now},
	})
	s.Count("support", "prod", 2, rel.ID, "candidate") // the server's own resolve
	_ = s.Flush(ctx)
	_, err := s.Record(ctx, []exposure.Item{{Agent: "support", Env: "prod", Version: 7, Count: 1, At: now}})

	rows, _, _ := s.List(ctx, exposure.ListInput{Agent: "support", Env: "prod", From: now.Add(-time.Hour), To: now.Add(time.Minute),
		Page: promptstore.Page{Limit: 10}})
	fmt.Println("accepted", res.Accepted)
	for _, r := range rows {
		fmt.Println(r.Version, r.Arm, r.Count)
	}
	fmt.Println(err)
	// Output:
	// accepted 2
	// 2 candidate 43
	// invalid_field: items[0].version: env prod of support did not serve version 7 then (it serves 1)
}
