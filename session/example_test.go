package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/session"
	"github.com/promptd/promptd/sqlstore"
)

// Two runtimes share a session: the one holding the lease writes with its
// fence; after another takes the lease over, the old fence is refused.
func Example() {
	ctx := audit.WithActor(context.Background(), "example")
	dir, _ := os.MkdirTemp("", "session-example")
	defer os.RemoveAll(dir)
	db, _ := sqlstore.Open(ctx, sqlstore.Config{SQLitePath: filepath.Join(dir, "promptd.db")})
	defer sqlstore.Close(db)
	if err := sqlstore.Migrate(ctx, db, append(append(audit.Migrations(), promptstore.Migrations()...), session.Migrations()...)...); err != nil {
		panic(err)
	}
	// One lock service for everything (a Redis one for several processes).
	locker := locks.NewMemory(locks.Options{Holder: "example"})
	store := promptstore.New(db, promptstore.Options{Instance: "example", Locker: locker})
	defer store.Close()
	if _, err := store.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "chat", Config: json.RawMessage(`{"system": "Be brief."}`)}); err != nil {
		panic(err)
	}
	zero := int64(0)
	if _, err := store.SwitchPointer(ctx, promptstore.SwitchInput{Agent: "chat", Env: "prod", Version: 1, ExpectedRevision: &zero}); err != nil {
		panic(err)
	}
	sessions := session.New(session.Options{Store: store, DB: db, Locker: locker, Instance: "example"})

	s, _, err := sessions.Create(ctx, session.CreateInput{SessionID: "conv-1", Agent: "chat", Env: "prod", UserID: "u1"})
	if err != nil {
		panic(err)
	}
	fmt.Println("pinned to version", s.PinnedVersion)

	a, _ := sessions.AcquireLease(ctx, "conv-1", session.LeaseInput{Holder: "runtime-a", TTL: 10 * time.Second})
	out, err := sessions.Append(ctx, "conv-1", session.WriteCondition{ExpectedRevision: &zero, Fence: &a.Fence},
		[]session.TurnInput{{Role: "user", Content: json.RawMessage(`"hello"`)}})
	fmt.Println("A appended seqs", out.Seqs, err)

	b, _ := sessions.AcquireLease(ctx, "conv-1", session.LeaseInput{Holder: "runtime-b", TTL: 10 * time.Second, Mode: session.ModePreempt})
	_, err = sessions.Append(ctx, "conv-1", session.WriteCondition{ExpectedRevision: &out.Revision, Fence: &a.Fence},
		[]session.TurnInput{{Role: "assistant", Content: json.RawMessage(`"late"`)}})
	var stale *session.StaleFence
	fmt.Println("A after B took over:", errors.As(err, &stale), stale.Current == b.Fence)
	// Output:
	// pinned to version 1
	// A appended seqs [1] <nil>
	// A after B took over: true true
}
