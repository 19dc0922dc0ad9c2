// Command embedded is promptd used as a library by a program of its own
// module: it publishes a prompt, rolls a new version out to half of its
// users, pins a conversation to what its user got, appends turns to it and
// assembles the prompt with the history — all in process on SQLite, no
// server, no HTTP.
//
//	cd examples/embedded && go run .
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/promptd/promptd"
	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/session"
	"github.com/promptd/promptd/sqlstore"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "embedded:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	ctx = audit.WithActor(ctx, "embedded-example")
	dir, err := os.MkdirTemp("", "promptd-embedded")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	rt, err := promptd.Open(ctx, sqlstore.Config{SQLitePath: filepath.Join(dir, "promptd.db")}, promptd.Options{Instance: "embedded"})
	if err != nil {
		return err
	}
	defer rt.Close()

	// Publish: version 1, then version 2 built on it. A writer that starts
	// from a stale base gets a *VersionConflict instead of overwriting.
	configs := []string{
		`{"system": "You are {{persona}} for ACME.", "variables": {"persona": {"default": "a helpful assistant"}}}`,
		`{"system": "You are {{persona}} for ACME. Answer in two sentences.", "variables": {"persona": {"default": "a helpful assistant"}}}`,
	}
	for base, cfg := range configs {
		v, err := rt.Prompts.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "support", BaseVersion: base, Config: json.RawMessage(cfg)})
		if err != nil {
			return err
		}
		fmt.Printf("published support v%d %s\n", v.Version, v.ContentHash[:19])
	}
	_, err = rt.Prompts.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "support", BaseVersion: 1, Config: json.RawMessage(configs[0])})
	var conflict *promptstore.VersionConflict
	if !errors.As(err, &conflict) {
		return fmt.Errorf("a stale base was not refused: %v", err)
	}
	fmt.Printf("stale publish refused: latest is v%d\n", conflict.Latest)

	zero := int64(0)
	if _, err := rt.Prompts.SwitchPointer(ctx, promptstore.SwitchInput{Agent: "support", Env: "prod", Version: 1, ExpectedRevision: &zero}); err != nil {
		return err
	}

	// Release: version 2 to 50 % of users, sticky per user.
	rel, err := rt.Releases.Create(ctx, release.CreateInput{Agent: "support", Env: "prod", CandidateVersion: 2, Percent: "50"})
	if err != nil {
		return err
	}
	counts := map[int]int{}
	for i := 0; i < 1000; i++ {
		p, err := rt.Prompt(ctx, promptstore.Request{Agent: "support", Env: "prod", UserID: fmt.Sprintf("user-%d", i)})
		if err != nil {
			return err
		}
		counts[p.Version]++
	}
	fmt.Printf("release %s at 50%%: 1000 users -> v1 %d, v2 %d\n", rel.State, counts[1], counts[2])

	// A session pins its user's version for the whole conversation.
	s, _, err := rt.Sessions.Create(ctx, session.CreateInput{SessionID: "chat-1", Agent: "support", Env: "prod", UserID: "user-7"})
	if err != nil {
		return err
	}
	rev := int64(0)
	for _, text := range []string{"Where is my order?", "It is order 1234."} {
		a, err := rt.Sessions.Append(ctx, s.SessionID, session.WriteCondition{ExpectedRevision: &rev},
			[]session.TurnInput{{Role: "user", Content: json.RawMessage(fmt.Sprintf("%q", text))}})
		if err != nil {
			return err
		}
		rev = a.Revision
	}
	// Appending from a stale revision is refused, never a lost turn.
	stale := int64(0)
	_, err = rt.Sessions.Append(ctx, s.SessionID, session.WriteCondition{ExpectedRevision: &stale},
		[]session.TurnInput{{Role: "user", Content: json.RawMessage(`"lost?"`)}})
	var rc *session.RevisionConflict
	if !errors.As(err, &rc) {
		return fmt.Errorf("a stale append was not refused: %v", err)
	}
	fmt.Printf("stale append refused: session is at revision %d\n", rc.Current)

	out, err := rt.Assemble(ctx, promptstore.AssembleInput{
		Request: promptstore.Request{Agent: "support", Env: "prod", SessionID: "chat-1"}, History: true})
	if err != nil {
		return err
	}
	fmt.Printf("chat-1 (pinned %v) assembled from v%d:\n", out.Pinned, out.Version)
	for _, m := range out.Messages {
		fmt.Printf("  %s: %s\n", m.Role, m.Content)
	}
	return nil
}
