// Command embedded is promptd used as a library by a program of its own
// module: it publishes a prompt, rolls a new version out to half of its
// users, pins a conversation to what its user got, appends turns to it and
// assembles the prompt with the history; switches a protected env, which
// files a change request that an approval applies; then, with the runtime's jobs
// running (Runtime.Run, as in the server), a release's scheduled step is
// applied and a guard rolls a failing candidate back — all in process on
// SQLite, no server, no HTTP.
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
	"time"

	"github.com/promptd/promptd"
	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/changes"
	"github.com/promptd/promptd/exposure"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/release/guard"
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

	rt, err := promptd.Open(ctx, sqlstore.Config{SQLitePath: filepath.Join(dir, "promptd.db")}, promptd.Options{Instance: "embedded",
		Jobs: promptd.JobOptions{GuardEvery: 200 * time.Millisecond}})
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
	// (A fixed id keeps this program's output the same from run to run:
	// buckets are a hash of the release id and the user.)
	rel, err := rt.Releases.Create(ctx, release.CreateInput{ID: "rel_00000000000e4bed", Agent: "support", Env: "prod",
		CandidateVersion: 2, Percent: "50"})
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
	if err := gated(ctx, rt); err != nil {
		return err
	}
	return jobs(ctx, rt, configs)
}

// gated protects env "eu" (one approval) and switches its pointer: the
// runtime files a change request, as it does for an HTTP client, and an
// approval by another principal applies it.
func gated(ctx context.Context, rt *promptd.Runtime) error {
	ops := &access.Token{Name: "ops", Role: access.RoleAdmin, Principal: "ops", Bootstrap: true}
	lead := &access.Token{Name: "lead", Role: access.RoleAdmin, Principal: "lead", Bootstrap: true}
	zero := int64(0)
	eu, _, err := rt.Changes.SwitchPointer(ctx, changes.Caller{Token: ops},
		promptstore.SwitchInput{Agent: "support", Env: "eu", Version: 1, ExpectedRevision: &zero})
	if err != nil {
		return err
	}
	if _, _, err := rt.Changes.SetProtection(ctx, changes.Caller{Token: ops}, access.Protection{Env: "eu", Approvals: 1}, &zero); err != nil {
		return err
	}
	rev := eu.Revision
	_, cr, err := rt.Changes.SwitchPointer(ctx, changes.Caller{Token: ops},
		promptstore.SwitchInput{Agent: "support", Env: "eu", Version: 2, ExpectedRevision: &rev})
	if err != nil || cr == nil {
		return fmt.Errorf("the switch in a protected env was not gated: %v", err)
	}
	fmt.Printf("switch of support/eu to v2 gated: change request %s, %d approval needed\n", cr.State, cr.Needed)
	if cr, err = rt.Changes.Approve(ctx, cr.ID, lead); err != nil {
		return err
	}
	now, err := rt.Prompts.GetEnv(ctx, "support", "eu")
	if err != nil {
		return err
	}
	fmt.Printf("approved by lead: %s; support/eu serves v%d\n", cr.State, now.Version)
	return nil
}

// jobs runs the runtime's background jobs (Run: the reconciler, release
// steps and guards, sweeps, retention; the server runs the same) and shows
// two of them at work.
func jobs(ctx context.Context, rt *promptd.Runtime, configs []string) error {
	jctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rt.Run(jctx) }()
	defer func() { stop(); <-done }()
	for _, agent := range []string{"billing", "triage"} {
		for base, cfg := range configs {
			if _, err := rt.Prompts.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: agent, BaseVersion: base, Config: json.RawMessage(cfg)}); err != nil {
				return err
			}
		}
		zero := int64(0)
		if _, err := rt.Prompts.SwitchPointer(ctx, promptstore.SwitchInput{Agent: agent, Env: "prod", Version: 1, ExpectedRevision: &zero}); err != nil {
			return err
		}
	}

	// A scheduled step: 10 % now, 50 % a second later, applied by the
	// release-steps job.
	stepped, err := rt.Releases.Create(ctx, release.CreateInput{Agent: "billing", Env: "prod", CandidateVersion: 2, Percent: "10",
		Steps: []release.Step{{Percent: "50", After: "1s"}}})
	if err != nil {
		return err
	}
	got, err := waitFor(ctx, rt, stepped.ID, func(r *release.Release) bool { return r.StepsApplied == 1 })
	if err != nil {
		return err
	}
	fmt.Printf("billing release stepped by the scheduler: %s%% -> %s%%\n", stepped.Percent, got.Percent)

	// A guard: the candidate fails 40 % of the time against the baseline's
	// 5 %, on 400 outcomes each; the guard job rolls it back.
	guarded, err := rt.Releases.Create(ctx, release.CreateInput{Agent: "triage", Env: "prod", CandidateVersion: 2, Percent: "50",
		Guard: &guard.Config{Metric: guard.FailureRate, MaxDegradation: 2, MinSamples: 200, Confidence: 0.95, Action: guard.Rollback}})
	if err != nil {
		return err
	}
	var outcomes []exposure.Outcome
	for i := 0; i < 400; i++ {
		now := time.Now()
		outcomes = append(outcomes,
			exposure.Outcome{Agent: "triage", Env: "prod", ReleaseID: guarded.ID, Arm: "baseline", Version: 1, Reason: "bucket", Success: i%20 != 0, At: now},
			exposure.Outcome{Agent: "triage", Env: "prod", ReleaseID: guarded.ID, Arm: "candidate", Version: 2, Reason: "bucket", Success: i%5 > 1, At: now})
	}
	for len(outcomes) > 0 {
		n := min(len(outcomes), exposure.MaxItems)
		if _, err := rt.Exposures.RecordOutcomes(ctx, outcomes[:n]); err != nil {
			return err
		}
		outcomes = outcomes[n:]
	}
	got, err = waitFor(ctx, rt, guarded.ID, func(r *release.Release) bool { return r.State != release.Running })
	if err != nil {
		return err
	}
	fmt.Printf("triage release %s by its guard (%s)\n", got.State, got.Guard.State)
	return nil
}

// waitFor polls release id until done holds (at most 30 s).
func waitFor(ctx context.Context, rt *promptd.Runtime, id string, done func(*release.Release) bool) (*release.Release, error) {
	for deadline := time.Now().Add(30 * time.Second); ; {
		r, err := rt.Releases.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		if done(r) {
			return r, nil
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("release %s: still %s after 30 s", id, r.State)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
