package release_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/sqlstore"
)

// A release puts version 2 in front of 10 % of users, sticky per user,
// then rolls it back: the candidate is revoked and everybody gets the
// baseline again.
func Example() {
	ctx := audit.WithActor(context.Background(), "example")
	dir, _ := os.MkdirTemp("", "release-example")
	defer os.RemoveAll(dir)
	db, _ := sqlstore.Open(ctx, sqlstore.Config{SQLitePath: filepath.Join(dir, "promptd.db")})
	defer sqlstore.Close(db)
	if err := sqlstore.Migrate(ctx, db, append(append(audit.Migrations(), promptstore.Migrations()...), release.Migrations()...)...); err != nil {
		panic(err)
	}
	// One lock service for everything (a Redis one for several processes).
	locker := locks.NewMemory(locks.Options{Holder: "example"})
	store := promptstore.New(db, promptstore.Options{Instance: "example", Locker: locker})
	defer store.Close()
	for i := 0; i < 2; i++ {
		if _, err := store.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "support", BaseVersion: i,
			Config: json.RawMessage(fmt.Sprintf(`{"system": "v%d"}`, i+1))}); err != nil {
			panic(err)
		}
	}
	zero := int64(0)
	if _, err := store.SwitchPointer(ctx, promptstore.SwitchInput{Agent: "support", Env: "prod", Version: 1, ExpectedRevision: &zero}); err != nil {
		panic(err)
	}

	releases := release.New(release.Options{Store: store, DB: db, Locker: locker, Instance: "example"})
	r, err := releases.Create(ctx, release.CreateInput{Agent: "support", Env: "prod", CandidateVersion: 2, Percent: "10"})
	if err != nil {
		panic(err)
	}
	// Bucketing is a pure function of the release id and the user.
	arm, version, _ := release.Arm(r, "user-1", "")
	res, _ := releases.Resolve(ctx, promptstore.Request{Agent: "support", Env: "prod", UserID: "user-1"})
	fmt.Println("same answer as Arm:", res.Version == version && res.Release.Arm == arm)

	if _, err := releases.Transition(ctx, r.ID, release.ActRollback, release.TransitionInput{Reason: "bad"}); err != nil {
		panic(err)
	}
	env, _ := store.GetEnv(ctx, "support", "prod")
	fmt.Println("after rollback: version", env.Version, "revoked", env.Revoked)
	// Output:
	// same answer as Arm: true
	// after rollback: version 1 revoked [2]
}
