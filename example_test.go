package promptd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/promptd/promptd"
	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/board"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/session"
	"github.com/promptd/promptd/sqlstore"
)

// A Go program embeds promptd: it publishes two versions, rolls the second
// out to every user, pins a conversation and assembles its prompt with the
// history, all in process on SQLite.
func Example() {
	ctx := audit.WithActor(context.Background(), "example")
	dir, _ := os.MkdirTemp("", "promptd-example")
	defer os.RemoveAll(dir)
	rt, err := promptd.Open(ctx, sqlstore.Config{SQLitePath: filepath.Join(dir, "promptd.db")}, promptd.Options{Instance: "example"})
	if err != nil {
		panic(err)
	}
	defer rt.Close()

	for i, system := range []string{"You are terse.", "You are {{persona}}."} {
		if _, err := rt.Prompts.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "support", BaseVersion: i,
			Config: json.RawMessage(fmt.Sprintf(`{"system": %q, "variables": {"persona": {"default": "kind"}}}`, system))}); err != nil {
			panic(err)
		}
	}
	zero := int64(0)
	if _, err := rt.Prompts.SwitchPointer(ctx, promptstore.SwitchInput{Agent: "support", Env: "prod", Version: 1, ExpectedRevision: &zero}); err != nil {
		panic(err)
	}
	if _, err := rt.Releases.Create(ctx, release.CreateInput{Agent: "support", Env: "prod", CandidateVersion: 2, Percent: "100"}); err != nil {
		panic(err)
	}
	p, err := rt.Prompt(ctx, promptstore.Request{Agent: "support", Env: "prod", UserID: "user-1"})
	if err != nil {
		panic(err)
	}
	fmt.Println("user-1 gets version", p.Version, "arm", p.Release.Arm)

	s, _, err := rt.Sessions.Create(ctx, session.CreateInput{SessionID: "chat-1", Agent: "support", Env: "prod", UserID: "user-1"})
	if err != nil {
		panic(err)
	}
	if _, err := rt.Sessions.Append(ctx, s.SessionID, session.WriteCondition{ExpectedRevision: &zero},
		[]session.TurnInput{{Role: "user", Content: json.RawMessage(`"Where is my order?"`)}}); err != nil {
		panic(err)
	}
	out, err := rt.Assemble(ctx, promptstore.AssembleInput{
		Request: promptstore.Request{Agent: "support", Env: "prod", SessionID: "chat-1"}, History: true})
	if err != nil {
		panic(err)
	}
	for _, m := range out.Messages {
		fmt.Printf("%s: %s\n", m.Role, m.Content)
	}
	// Output:
	// user-1 gets version 2 arm candidate
	// system: "You are kind."
	// user: "Where is my order?"
}

// An embedding program makes a write idempotent: a retry with the same
// Call (after a timeout, or from another instance) gets the first run's
// result back instead of writing again.
func ExampleIdempotent() {
	ctx := audit.WithActor(context.Background(), "crawler")
	dir, _ := os.MkdirTemp("", "promptd-example")
	defer os.RemoveAll(dir)
	rt, err := promptd.Open(ctx, sqlstore.Config{SQLitePath: filepath.Join(dir, "promptd.db")}, promptd.Options{Instance: "example"})
	if err != nil {
		panic(err)
	}
	defer rt.Close()

	in := board.RecordInput{Payload: []byte(`{"url": "https://example.com"}`)}
	call := promptd.Call{Caller: "crawler", Operation: "boards.create/crawl", Key: "page-1", Request: json.RawMessage(in.Payload)}
	var ids []string
	for range 2 {
		r, replayed, err := promptd.Idempotent(ctx, rt, call, func(record sqlstore.Then[*board.Record]) (*board.Record, error) {
			r, _, err := rt.Boards.Create(ctx, "crawl", in, record) // the result is recorded in the create's transaction
			return r, err
		})
		if err != nil {
			panic(err)
		}
		ids = append(ids, r.ID)
		fmt.Println(r.State, "replayed:", replayed)
	}
	fmt.Println("one record:", ids[0] == ids[1])
	// Output:
	// pending replayed: false
	// pending replayed: true
	// one record: true
}
