package client_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/promptd/promptd/api/client"
)

// TestErrors_eachProblemCode_isTyped provokes every problem code a client
// can provoke against a real promptd and checks errors.Is and the
// accessors of each.
func TestErrors_eachProblemCode_isTyped(t *testing.T) {
	s := startPromptd(t)
	ctx := ctxT(t)
	v1 := publish(t, s, "support", "prod", "You are helpful.")

	t.Run("unauthorized", func(t *testing.T) {
		_, err := client.New(s.p.URL, "not-a-token-at-all-0000").ListAgents(ctx, client.ListOptions{})
		if e := wantCode(t, err, client.ErrUnauthorized); e.Status != http.StatusUnauthorized {
			t.Fatalf("status %d", e.Status)
		}
	})
	t.Run("forbidden", func(t *testing.T) {
		_, err := s.rt.CreateVersion(ctx, "support", client.CreateVersionRequest{BaseVersion: 1, Config: cfg("x")})
		wantCode(t, err, client.ErrForbidden)
	})
	t.Run("version_conflict", func(t *testing.T) {
		_, err := s.admin.CreateVersion(ctx, "support", client.CreateVersionRequest{BaseVersion: 0, Config: cfg("other")})
		if e := wantCode(t, err, client.ErrVersionConflict); e.LatestVersion() != v1.Version {
			t.Fatalf("LatestVersion %d, want %d", e.LatestVersion(), v1.Version)
		}
	})
	t.Run("invalid_config", func(t *testing.T) {
		_, err := s.admin.CreateVersion(ctx, "support", client.CreateVersionRequest{BaseVersion: 1, Config: json.RawMessage(`{"tools":[]}`)})
		if e := wantCode(t, err, client.ErrInvalidConfig); e.Field() != "config.system" {
			t.Fatalf("Field %q", e.Field())
		}
	})
	t.Run("undeclared_variable", func(t *testing.T) {
		_, err := s.admin.CreateVersion(ctx, "support", client.CreateVersionRequest{BaseVersion: 1, Config: cfg("Hi {{name}}")})
		if e := wantCode(t, err, client.ErrUndeclaredVariable); e.Variable() != "name" {
			t.Fatalf("Variable %q", e.Variable())
		}
	})
	t.Run("invalid_id", func(t *testing.T) {
		_, err := s.admin.GetVersion(ctx, "no{pe}", 1)
		wantCode(t, err, client.ErrInvalidID)
	})
	t.Run("not_found", func(t *testing.T) {
		_, err := s.rt.GetVersion(ctx, "support", 99)
		if e := wantCode(t, err, client.ErrVersionNotFound); !e.NotFound() {
			t.Fatal("NotFound() is false")
		}
		_, err = s.rt.GetVersion(ctx, "nobody", 1)
		wantCode(t, err, client.ErrAgentNotFound)
		_, err = s.rt.GetEnv(ctx, "support", "staging")
		wantCode(t, err, client.ErrNotFound)
		_, err = s.admin.PutEnv(ctx, "support", "prod", client.PutEnvRequest{Version: 42, ExpectedRevision: 1})
		wantCode(t, err, client.ErrVersionNotFound)
	})
	t.Run("invalid_field_and_body_too_large", func(t *testing.T) {
		err := s.admin.Do(ctx, http.MethodPost, "/v1/agents/support/versions", map[string]any{"config": map[string]any{"system": "x"}}, nil)
		if e := wantCode(t, err, client.ErrInvalidField); e.Field() != "base_version" {
			t.Fatalf("Field %q", e.Field())
		}
		big := map[string]any{"base_version": 1, "config": map[string]any{"system": strings.Repeat("x", 2<<20)}}
		wantCode(t, s.admin.Do(ctx, http.MethodPost, "/v1/agents/support/versions", big, nil), client.ErrBodyTooLarge)
		wantCode(t, s.admin.Do(ctx, http.MethodPatch, "/v1/agents", nil, nil), client.ErrMethodNotAllowed)
	})
	t.Run("precondition_required", func(t *testing.T) {
		err := s.admin.Do(ctx, http.MethodPut, "/v1/agents/support/envs/prod", map[string]any{"version": 1}, nil)
		wantCode(t, err, client.ErrPreconditionRequired)
	})
	t.Run("revision_conflict", func(t *testing.T) {
		_, err := s.admin.PutEnv(ctx, "support", "prod", client.PutEnvRequest{Version: 1, ExpectedRevision: 7})
		if e := wantCode(t, err, client.ErrRevisionConflict); e.CurrentRevision() != 1 {
			t.Fatalf("CurrentRevision %d", e.CurrentRevision())
		}
	})
	t.Run("missing_variable", func(t *testing.T) {
		cfg := json.RawMessage(`{"system":"Hi {{name}}","variables":{"name":{"required":true}}}`)
		if _, err := s.admin.CreateVersion(ctx, "greeter", client.CreateVersionRequest{Config: cfg}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.admin.PutEnv(ctx, "greeter", "prod", client.PutEnvRequest{Version: 1}); err != nil {
			t.Fatal(err)
		}
		_, err := s.rt.Assemble(ctx, "greeter", "prod", client.AssembleRequest{UserID: "u1"})
		if e := wantCode(t, err, client.ErrMissingVariable); e.Variable() != "name" {
			t.Fatalf("Variable %q", e.Variable())
		}
		a, err := s.rt.Assemble(ctx, "greeter", "prod", client.AssembleRequest{Variables: map[string]string{"name": "Ada"}})
		if err != nil || a.Messages[0].Text() != "Hi Ada" {
			t.Fatalf("assemble: %+v, %v", a, err)
		}
		// Without model.name there is no openai body; with it, the body
		// and the headers say what was served.
		_, err = s.rt.AssembleOpenAI(ctx, "greeter", "prod", client.AssembleRequest{Variables: map[string]string{"name": "Ada"}})
		if e := wantCode(t, err, client.ErrInvalidConfig); e.Field() != "config.model.name" {
			t.Fatalf("Field %q", e.Field())
		}
		cfg = json.RawMessage(`{"system":"Hi {{name}}","model":{"name":"gpt-4o"},"variables":{"name":{"required":true}}}`)
		if _, err := s.admin.CreateVersion(ctx, "greeter", client.CreateVersionRequest{BaseVersion: 1, Config: cfg}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.admin.PutEnv(ctx, "greeter", "staging", client.PutEnvRequest{Version: 2}); err != nil {
			t.Fatal(err)
		}
		o, err := s.rt.AssembleOpenAI(ctx, "greeter", "staging", client.AssembleRequest{Variables: map[string]string{"name": "Ada"}})
		if err != nil || string(o.Body) != `{"model":"gpt-4o","messages":[{"role":"system","content":"Hi Ada"}]}` || o.Served != "greeter/staging/2" || o.Release != "" {
			t.Fatalf("openai: %+v, %v", o, err)
		}
	})
	t.Run("import_rejected", func(t *testing.T) {
		_, err := s.admin.Import(ctx, client.ImportAllOrNothing, []client.ImportItem{
			{Agent: "fresh", BaseVersion: 0, Config: cfg("new")},
			{Agent: "support", BaseVersion: 0, Config: cfg("stale")}})
		e := wantCode(t, err, client.ErrImportRejected)
		r := e.ImportResult()
		if r == nil || r.Summary.Conflict != 1 || len(r.Results) != 2 || r.Results[1].LatestVersion != 1 {
			t.Fatalf("ImportResult %+v", r)
		}
		if _, err := s.rt.GetVersion(ctx, "fresh", 1); !errors.Is(err, client.ErrAgentNotFound) {
			t.Fatalf("all_or_nothing wrote something: %v", err)
		}
	})
	t.Run("idempotency_key_reused", func(t *testing.T) {
		kctx := client.WithIdempotencyKey(ctx, "reuse-key-1")
		a, err := s.admin.CreateVersion(kctx, "idem", client.CreateVersionRequest{Config: cfg("one")})
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.admin.CreateVersion(kctx, "idem", client.CreateVersionRequest{Config: cfg("one")})
		if err != nil || b.Version != a.Version || b.CreatedAt != a.CreatedAt {
			t.Fatalf("replay: %+v, %v; first %+v", b, err, a)
		}
		_, err = s.admin.CreateVersion(kctx, "idem", client.CreateVersionRequest{Config: cfg("two")})
		wantCode(t, err, client.ErrIdempotencyKeyReused)
	})
	t.Run("version_current_and_revoked", func(t *testing.T) {
		_, err := s.admin.Revoke(ctx, "support", "prod", 1, "test")
		wantCode(t, err, client.ErrVersionCurrent)
		v2 := publish(t, s, "support", "prod", "You are very helpful.")
		if _, err := s.admin.Revoke(ctx, "support", "prod", 1, "bad"); err != nil {
			t.Fatal(err)
		}
		_, err = s.admin.PutEnv(ctx, "support", "prod", client.PutEnvRequest{Version: 1, ExpectedRevision: 2})
		wantCode(t, err, client.ErrVersionRevoked)
		if e, err := s.admin.Unrevoke(ctx, "support", "prod", 1); err != nil || e.IsRevoked(1) || e.Version != v2.Version {
			t.Fatalf("unrevoke: %+v, %v", e, err)
		}
	})
	t.Run("releases", func(t *testing.T) { releaseErrors(t, s) })
	t.Run("sessions", func(t *testing.T) { sessionErrors(t, s) })
	t.Run("generic_leases", func(t *testing.T) {
		l, err := s.rt.AcquireLeases(ctx, client.LeasesRequest{Resources: []string{"order:1", "order:2"}, Holder: "a", TTL: 5 * time.Second})
		if err != nil || l.Fences["order:1"] == 0 {
			t.Fatalf("acquire: %+v, %v", l, err)
		}
		_, err = s.rt.AcquireLeases(ctx, client.LeasesRequest{Resources: []string{"order:2"}, Holder: "b", TTL: time.Second})
		e := wantCode(t, err, client.ErrLeaseHeld)
		if c := e.Conflicts(); len(c) != 1 || c[0].Resource != "order:2" || c[0].Holder != "a" {
			t.Fatalf("Conflicts %+v", c)
		}
		if _, err := s.rt.RenewLeases(ctx, l.LeaseID, l.Token, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := s.rt.ReleaseLeases(ctx, l.LeaseID, l.Token); err != nil {
			t.Fatal(err)
		}
		wantCode(t, s.rt.ReleaseLeases(ctx, l.LeaseID, l.Token), client.ErrLeaseLost)
		_, err = s.rt.RenewLeases(ctx, "ls_not-a-lease", l.Token, time.Second)
		wantCode(t, err, client.ErrLeaseNotFound)
	})
}

func releaseErrors(t *testing.T, s *server) {
	ctx := ctxT(t)
	publish(t, s, "rel", "prod", "baseline")
	v2 := publish(t, s, "rel", "", "candidate")
	_, err := s.admin.CreateRelease(ctx, "rel", "nowhere", client.CreateReleaseRequest{CandidateVersion: 2, Percent: "10"})
	wantCode(t, err, client.ErrNoPointer)
	_, err = s.admin.CreateRelease(ctx, "rel", "prod", client.CreateReleaseRequest{CandidateVersion: 2, Percent: "10.001"})
	wantCode(t, err, client.ErrInvalidPercent)
	r, err := s.admin.CreateRelease(ctx, "rel", "prod", client.CreateReleaseRequest{CandidateVersion: v2.Version, Percent: "10"})
	if err != nil || r.State != client.StateRunning || r.Percent != "10" {
		t.Fatalf("create release: %+v, %v", r, err)
	}
	_, err = s.admin.CreateRelease(ctx, "rel", "prod", client.CreateReleaseRequest{CandidateVersion: v2.Version, Percent: "20"})
	if e := wantCode(t, err, client.ErrReleaseActive); e.ReleaseID() != r.ID {
		t.Fatalf("ReleaseID %q, want %q", e.ReleaseID(), r.ID)
	}
	env, err := s.admin.GetEnv(ctx, "rel", "prod")
	if err != nil || env.Release == nil || env.Release.ID != r.ID {
		t.Fatalf("env names its release: %+v, %v", env, err)
	}
	_, err = s.admin.PutEnv(ctx, "rel", "prod", client.PutEnvRequest{Version: 2, ExpectedRevision: env.Revision})
	wantCode(t, err, client.ErrReleaseActive)
	_, err = s.admin.SetPercent(ctx, r.ID, "50", r.Revision+5, "")
	wantCode(t, err, client.ErrRevisionConflict)
	if r, err = s.admin.SetPercent(ctx, r.ID, "50", r.Revision, "ramp"); err != nil || r.Percent != "50" {
		t.Fatalf("set percent: %+v, %v", r, err)
	}
	if r, err = s.admin.Promote(ctx, r.ID, client.TransitionOptions{}); err != nil || r.State != client.StatePromoted {
		t.Fatalf("promote: %+v, %v", r, err)
	}
	_, err = s.admin.Pause(ctx, r.ID, client.TransitionOptions{})
	if e := wantCode(t, err, client.ErrInvalidTransition); e.State() != client.StatePromoted {
		t.Fatalf("State %q", e.State())
	}
	_, err = s.rt.GetRelease(ctx, "rel_nope")
	wantCode(t, err, client.ErrReleaseNotFound)
	steps := []client.Step{{Percent: "50", After: "1m"}, {Percent: "20", After: "1m"}}
	_, err = s.admin.CreateRelease(ctx, "rel", "prod", client.CreateReleaseRequest{CandidateVersion: 1, Percent: "10", Steps: steps})
	wantCode(t, err, client.ErrInvalidSteps)
}

func sessionErrors(t *testing.T, s *server) {
	ctx := ctxT(t)
	_, err := s.rt.GetSession(ctx, "nope", 0, 0)
	wantCode(t, err, client.ErrSessionNotFound)
	sess, err := s.rt.CreateSession(ctx, client.CreateSessionRequest{Agent: "support", Env: "prod", UserID: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.rt.CreateSession(ctx, client.CreateSessionRequest{SessionID: sess.SessionID, Agent: "support", Env: "prod", UserID: "u2"})
	wantCode(t, err, client.ErrSessionExists)
	_, err = s.rt.Resolve(ctx, "greeter", "prod", client.Caller{SessionID: sess.SessionID})
	wantCode(t, err, client.ErrSessionMismatch)
	a, err := s.rt.AcquireSessionLease(ctx, sess.SessionID, client.LeaseRequest{Holder: "A", TTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.rt.AcquireSessionLease(ctx, sess.SessionID, client.LeaseRequest{Holder: "B", TTL: 5 * time.Second, Mode: client.ModePreempt})
	if err != nil || b.Fence <= a.Fence {
		t.Fatalf("preempt: %+v, %v", b, err)
	}
	_, err = s.rt.AppendTurns(ctx, sess.SessionID, client.Fenced(0, a.Fence), client.TextTurn("user", "late"))
	if e := wantCode(t, err, client.ErrStaleFence); e.CurrentFence() != b.Fence {
		t.Fatalf("CurrentFence %d, want %d", e.CurrentFence(), b.Fence)
	}
	_, err = s.rt.AcquireSessionLease(ctx, sess.SessionID, client.LeaseRequest{Holder: "C", TTL: time.Second})
	if e := wantCode(t, err, client.ErrLeaseHeld); e.Holder() != "B" || e.ExpiresAt().IsZero() {
		t.Fatalf("Holder %q ExpiresAt %v", e.Holder(), e.ExpiresAt())
	}
	_, err = s.rt.AppendTurns(ctx, sess.SessionID, client.WriteCondition{}, client.TextTurn("user", "unfenced"))
	wantCode(t, err, client.ErrLeaseHeld)
	_, err = s.rt.RenewSessionLease(ctx, sess.SessionID, a.Token, time.Second)
	wantCode(t, err, client.ErrLeaseLost)
	app, err := s.rt.AppendTurns(ctx, sess.SessionID, client.Fenced(0, b.Fence), client.TextTurn("user", "hi"))
	if err != nil || app.Revision != 1 || len(app.Seqs) != 1 {
		t.Fatalf("append: %+v, %v", app, err)
	}
	_, err = s.rt.AppendTurns(ctx, sess.SessionID, client.Fenced(0, b.Fence), client.TextTurn("user", "again"))
	if e := wantCode(t, err, client.ErrRevisionConflict); e.CurrentRevision() != 1 {
		t.Fatalf("CurrentRevision %d", e.CurrentRevision())
	}
	if rev, err := s.rt.PutState(ctx, sess.SessionID, "plan", map[string]int{"step": 1}, client.Fenced(0, b.Fence)); err != nil || rev != 1 {
		t.Fatalf("put state: %d, %v", rev, err)
	}
	if st, err := s.rt.GetState(ctx, sess.SessionID); err != nil || st["plan"].Revision != 1 {
		t.Fatalf("get state: %+v, %v", st, err)
	}
	if _, err := s.rt.CloseSession(ctx, sess.SessionID, client.Fenced(1, b.Fence)); err != nil {
		t.Fatal(err)
	}
	_, err = s.rt.AppendTurns(ctx, sess.SessionID, client.WriteCondition{ExpectedRevision: 2}, client.TextTurn("user", "closed"))
	wantCode(t, err, client.ErrSessionClosed)
	got, err := s.rt.GetSession(ctx, sess.SessionID, 0, 10)
	if err != nil || got.State != "closed" || len(got.Turns) != 1 || got.Turns[0].Seq != 1 {
		t.Fatalf("get session: %+v, %v", got, err)
	}
}
