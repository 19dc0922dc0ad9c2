// Command runtime is the Go runtime of docs/sdk-go.md: it resolves
// and assembles prompts locally from promptd's bundle, then appends a turn
// to a session under its lease. RT is a runtime token.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/promptd/promptd/api/client"
	"github.com/promptd/promptd/bundle"
)

func main() {
	ctx := context.Background()
	rt := client.New("http://127.0.0.1:8080", os.Getenv("RT"))

	// One bundle fetch, then every resolve and assemble is local (the
	// change feed keeps it current; bundle.json serves a cold start while
	// promptd is down).
	local, err := rt.NewLocalPrompts(ctx, client.LocalOptions{Agents: []string{"support"}, CachePath: "bundle.json"})
	if err != nil {
		panic(err)
	}
	defer local.Close(ctx) // sends the exposures counted

	body, res, err := local.Assemble(ctx, bundle.Request{Agent: "support", Env: "prod", UserID: "u1", Format: "openai"})
	if err != nil {
		panic(err)
	}
	fmt.Printf("v%d: %s", res.Version, body) // body ends with a newline

	// A session, and a turn appended under its lease: the fence keeps a
	// holder whose lease was taken over from writing.
	s, err := rt.CreateSession(ctx, client.CreateSessionRequest{Agent: "support", Env: "prod", UserID: "u1"})
	if err != nil {
		panic(err)
	}
	held, err := rt.HoldLease(ctx, s.SessionID, "worker-1", 0)
	if err != nil {
		panic(err)
	}
	defer held.Release(ctx)
	ap, err := rt.AppendTurns(held.Context(), s.SessionID, held.Condition(s.Revision),
		client.TurnInput{Role: "user", Content: json.RawMessage(`"Where is my order?"`)})
	if err != nil {
		panic(err)
	}
	fmt.Printf("session %s pinned to v%d: turn %d appended at revision %d under fence %d\n",
		s.SessionID, s.PinnedVersion, ap.Seqs[0], ap.Revision, held.Fence())
}
