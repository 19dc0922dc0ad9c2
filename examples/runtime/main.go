// Command runtime is the Go runtime of docs/sdk-go.md: it resolves
// and assembles prompts locally from promptd's bundle, then appends a turn
// to a session under its lease.
//
// Environment:
//
//	PROMPTD_URL    promptd's base URL (default http://127.0.0.1:8080, where
//	               promptd listens by default)
//	PROMPTD_TOKEN  a runtime token (RT, its former name, is still read)
//
//	PROMPTD_URL=http://127.0.0.1:8080 PROMPTD_TOKEN=$(grep '^runtime:' data/tokens | cut -d: -f3) go run ./examples/runtime
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/promptd/promptd/api/client"
	"github.com/promptd/promptd/bundle"
)

// DefaultURL is promptd's address when PROMPTD_URL is unset: the
// address promptd listens on by default (PROMPTD_ADDR 127.0.0.1:8080).
const DefaultURL = "http://127.0.0.1:8080"

// settings reads promptd's base URL (PROMPTD_URL, without a trailing
// slash; DefaultURL when unset) and the runtime token (PROMPTD_TOKEN, or
// RT, the name this example read before) through getenv.
func settings(getenv func(string) string) (url, token string) {
	url = strings.TrimRight(getenv("PROMPTD_URL"), "/")
	if url == "" {
		url = DefaultURL
	}
	token = getenv("PROMPTD_TOKEN")
	if token == "" {
		token = getenv("RT")
	}
	return url, token
}

func main() {
	ctx := context.Background()
	url, token := settings(os.Getenv)
	if token == "" {
		fmt.Fprintln(os.Stderr, "runtime: set PROMPTD_TOKEN to a runtime token (and PROMPTD_URL, default "+DefaultURL+")")
		os.Exit(2)
	}
	rt := client.New(url, token)

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
