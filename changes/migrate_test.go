package changes_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/promptd/promptd"
	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/changes"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/sqlstore"
)

var leadToken = &access.Token{Name: "lead", Role: access.RoleAdmin, Principal: "lead", Bootstrap: true}

// before are the migrations of a promptd that stored HTTP bodies: every
// one but access/5 (the command columns) and changes/1 (the conversion).
func before() []sqlstore.Migration {
	var out []sqlstore.Migration
	for _, m := range promptd.Migrations() {
		if m.Component == "changes" || m.Component == "access" && m.Version >= 5 {
			continue
		}
		out = append(out, m)
	}
	return out
}

// legacyRequest inserts a pending change request as the earlier binary
// did: the HTTP body only.
func legacyRequest(t *testing.T, db interface {
	Exec(string, ...any) error
}, id, action, agent, env, body string, target int64) {
	t.Helper()
	now := time.Now().UnixMilli()
	if err := db.Exec(`INSERT INTO access_change_requests (cr_id, action, agent, env, request, target_revision, requested_by, requested_token,
		state, approvals, needed, approvers, problem, revision, created_at_ms, expires_at_ms, updated_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)`,
		id, action, agent, env, body, target, "ops", "ops", access.Pending, "[]", 1, "null", "null", now, now+int64(access.RequestTTL/time.Millisecond), now); err != nil {
		t.Fatal(err)
	}
}

// setup builds a database at the schema before commands with support v1
// and v2, prod at v1 (revision 1) and protected, and the legacy pending
// requests; convert runs the remaining migrations (the conversion).
func setup(t *testing.T, convert bool) (*promptd.Runtime, func(string, ...any) error) {
	t.Helper()
	ctx := context.Background()
	db, err := sqlstore.Open(ctx, sqlstore.Config{SQLitePath: filepath.Join(t.TempDir(), "promptd.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sqlstore.Close(db) })
	if err := sqlstore.Migrate(ctx, db, before()...); err != nil {
		t.Fatal(err)
	}
	exec := func(q string, args ...any) error { return db.Exec(q, args...).Error }
	if err := exec(`INSERT INTO access_protections (env, approvals, agents, approvers, revision, updated_by, updated_at_ms) VALUES ('prod', 1, 'null', 'null', 1, 'ops', 0)`); err != nil {
		t.Fatal(err)
	}
	legacyRequest(t, execFunc(exec), "cr_00000000000000000001", changes.ActionPointerSwitch, "support", "prod",
		`{"version":2,"expected_revision":1,"reason":"filed before commands"}`, 1)
	legacyRequest(t, execFunc(exec), "cr_00000000000000000002", changes.ActionPointerSwitch, "support", "prod", `{"reason":"no version"}`, 1)
	legacyRequest(t, execFunc(exec), "cr_00000000000000000003", changes.ActionProtectionSet, "", "prod",
		`{"approvals":0,"agents":null,"approvers":null,"expected_revision":1}`, 1)
	if convert {
		if err := sqlstore.Migrate(ctx, db, promptd.Migrations()...); err != nil {
			t.Fatal(err)
		}
	} else if err := sqlstore.Migrate(ctx, db, append(before(), accessOnly()...)...); err != nil {
		t.Fatal(err)
	}
	rt := promptd.New(db, promptd.Options{Instance: "test"})
	t.Cleanup(func() { _ = rt.Close() })
	for base := range 2 {
		if _, err := rt.Prompts.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "support", BaseVersion: base,
			Config: json.RawMessage(`{"system": "s` + string(rune('1'+base)) + `"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	zero := int64(0)
	if _, err := rt.Prompts.SwitchPointer(ctx, promptstore.SwitchInput{Agent: "support", Env: "prod", Version: 1, ExpectedRevision: &zero}); err != nil {
		t.Fatal(err)
	}
	return rt, exec
}

// accessOnly is access/5 alone: the columns without the conversion.
func accessOnly() []sqlstore.Migration {
	for _, m := range promptd.Migrations() {
		if m.Component == "access" && m.Version == 5 {
			return []sqlstore.Migration{m}
		}
	}
	return nil
}

type execFunc func(string, ...any) error

func (f execFunc) Exec(q string, args ...any) error { return f(q, args...) }

// A change request filed by the earlier binary (an HTTP body, no command)
// is approved after the migration, and applies what it asked for; one
// whose body does not say what to do is failed by the migration, never
// applied as something else.
func TestMigration_aPendingRequestFiledBefore_isApprovedAfter(t *testing.T) {
	ctx := context.Background()
	rt, _ := setup(t, true)

	cr, err := rt.Changes.Approve(ctx, "cr_00000000000000000001", leadToken)
	if err != nil || cr.State != access.Applied {
		t.Fatalf("approve the converted switch: %+v %v", cr, err)
	}
	if e, _ := rt.Prompts.GetEnv(ctx, "support", "prod"); e.Version != 2 {
		t.Fatalf("prod serves v%d after the approval, want v2", e.Version)
	}
	bad, _ := rt.Access.ChangeRequest(ctx, "cr_00000000000000000002")
	if bad.State != access.Failed || !strings.Contains(string(bad.Problem), "cannot apply") {
		t.Fatalf("the unreadable request: %s %s", bad.State, bad.Problem)
	}
	// The shown request keeps the body as it was received.
	if !strings.Contains(string(cr.Request), `"expected_revision":1`) {
		t.Fatalf("request shown: %s", cr.Request)
	}
	// The converted protection change: the protection is lifted by its approval.
	if _, err := rt.Changes.Approve(ctx, "cr_00000000000000000003", leadToken); err != nil {
		t.Fatal(err)
	}
	if p, _ := rt.Access.Protection(ctx, "prod"); p != nil && p.Approvals != 0 {
		t.Fatalf("protection after the approved lift: %+v", p)
	}
}

// The control: without the conversion the same request has no command;
// its approval fails it (UnreadableError), and the pointer stays.
func TestMigration_withoutTheConversion_theRequestFailsClosed(t *testing.T) {
	ctx := context.Background()
	rt, _ := setup(t, false)
	cr, err := rt.Changes.Approve(ctx, "cr_00000000000000000001", leadToken)
	if err != nil {
		t.Fatal(err)
	}
	if cr.State != access.Failed || !strings.Contains(string(cr.Problem), `"command_version":0`) {
		t.Fatalf("approved without a command: %s %s", cr.State, cr.Problem)
	}
	if e, _ := rt.Prompts.GetEnv(ctx, "support", "prod"); e.Version != 1 {
		t.Fatalf("prod serves v%d, want v1 (nothing applied)", e.Version)
	}
}

// A gated write without a requester's token is refused, not filed under
// nobody (and nothing is written); the same write of an unprotected env
// goes ahead without one.
func TestGated_withoutAToken_isRefused(t *testing.T) {
	ctx := context.Background()
	rt, _ := setup(t, true)
	rev := int64(1)
	e, cr, err := rt.Changes.SwitchPointer(ctx, changes.Caller{}, promptstore.SwitchInput{Agent: "support", Env: "prod", Version: 2, ExpectedRevision: &rev})
	if !errors.Is(err, changes.ErrNoRequester) || e != nil || cr != nil {
		t.Fatalf("switch of a protected env without a token: %v %v %v", e, cr, err)
	}
	zero := int64(0)
	if _, cr, err := rt.Changes.SwitchPointer(ctx, changes.Caller{}, promptstore.SwitchInput{Agent: "support", Env: "dev", Version: 2, ExpectedRevision: &zero}); err != nil || cr != nil {
		t.Fatalf("switch of an unprotected env without a token: %v %v", cr, err)
	}
	if _, err := rt.Changes.Approve(ctx, "cr_00000000000000000001", nil); !errors.Is(err, changes.ErrNoRequester) {
		t.Fatalf("approve without a token: %v", err)
	}
}
