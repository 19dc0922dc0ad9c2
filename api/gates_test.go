package api_test

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"gorm.io/gorm"

	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/sqlstore"
)

// gatedWrite is one write api/openapi.yaml gates in a protected env. setup prepares
// agent's env (unprotected yet) and returns what the write names (a
// release id, or ""); move changes the write's target with an ungated
// write.
type gatedWrite struct {
	setup   func(a *app, agent, env string) string
	write   func(a *app, agent, env, ref string) *httptest.ResponseRecorder
	applied func(a *app, agent, env, ref string) bool
	move    func(a *app, agent, env, ref string)
}

// checkGated: in an unprotected env the write goes ahead; in a protected
// one it answers 202 with a pending change request, applied once by
// another principal's approval; when its target moved meanwhile the
// approval marks it failed with revision_conflict and nothing is applied.
func checkGated(t *testing.T, g gatedWrite) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		a := newApp(t, db, withLeads)
		refs := map[string]string{}
		for _, agent := range []string{"gated-free", "gated-applied", "gated-moved"} {
			for i := range 3 {
				a.createVersion(agent, i, fmt.Sprintf("v%d", i+1))
			}
			env := "prod"
			if agent == "gated-free" {
				env = "staging"
			}
			refs[agent] = g.setup(a, agent, env)
		}
		a.ok(a.do("PUT", "/v1/protections/prod", admin, `{"approvals": 1}`), 200)

		if rec := g.write(a, "gated-free", "staging", refs["gated-free"]); rec.Code/100 != 2 || rec.Code == 202 {
			t.Fatalf("unprotected env: status %d, body %s", rec.Code, rec.Body)
		}
		if !g.applied(a, "gated-free", "staging", refs["gated-free"]) {
			t.Fatal("unprotected env: the write did not apply")
		}

		agent, ref := "gated-applied", refs["gated-applied"]
		rec := g.write(a, agent, "prod", ref)
		cr := a.ok(rec, 202)["change_request"].(map[string]any)
		id := cr["id"].(string)
		if cr["state"] != "pending" || rec.Header().Get("Location") != "/v1/change-requests/"+id {
			t.Fatalf("change request = %v (Location %q)", cr, rec.Header().Get("Location"))
		}
		if g.applied(a, agent, "prod", ref) {
			t.Fatal("a gated write applied before its approval")
		}
		problem(t, a.do("POST", "/v1/change-requests/"+id+"/approve", admin, ""), 403, "self_approval")
		got := a.ok(a.do("POST", "/v1/change-requests/"+id+"/approve", lead, ""), 200)
		if got["state"] != "applied" || !g.applied(a, agent, "prod", ref) {
			t.Fatalf("after the approval: %v (applied %v)", got, g.applied(a, agent, "prod", ref))
		}
		problem(t, a.do("POST", "/v1/change-requests/"+id+"/approve", lead2, ""), 409, "change_request_closed")
		var n int64
		a.db.Raw(`SELECT COUNT(*) FROM audit_events WHERE action = 'change_request.applied' AND resource = ?`, "change_request/"+id).Scan(&n)
		if n != 1 {
			t.Fatalf("applied %d times", n)
		}

		agent, ref = "gated-moved", refs["gated-moved"]
		id = a.ok(g.write(a, agent, "prod", ref), 202)["change_request"].(map[string]any)["id"].(string)
		g.move(a, agent, "prod", ref)
		got = a.ok(a.do("POST", "/v1/change-requests/"+id+"/approve", lead, ""), 200)
		prob, _ := got["problem"].(map[string]any)
		if got["state"] != "failed" || prob["code"] != "revision_conflict" || g.applied(a, agent, "prod", ref) {
			t.Fatalf("approval after the target moved: %v (applied %v)", got, g.applied(a, agent, "prod", ref))
		}
	})
}

func envPathOf(agent, env string) string { return "/v1/agents/" + agent + "/envs/" + env }

func (a *app) versionOf(agent, env string) int {
	var v int
	a.db.Raw(`SELECT version FROM prompt_env_pointers WHERE agent = ? AND env = ?`, agent, env).Scan(&v)
	return v
}

func (a *app) revoked(agent, env string, version int) bool {
	var n int64
	a.db.Raw(`SELECT COUNT(*) FROM prompt_revocations WHERE agent = ? AND env = ? AND version = ?`, agent, env, version).Scan(&n)
	return n > 0
}

func (a *app) revoke(agent, env string, version int) {
	a.t.Helper()
	a.ok(a.do("POST", envPathOf(agent, env)+"/revocations", admin, fmt.Sprintf(`{"version": %d}`, version)), 200)
}

func (a *app) release(id string) map[string]any {
	a.t.Helper()
	return a.ok(a.do("GET", "/v1/releases/"+id, admin, ""), 200)
}

// releaseIn publishes version 1 in env and starts a release of 2 at 10 %.
func (a *app) releaseIn(agent, env, extra string) string {
	a.t.Helper()
	a.publish(agent, env, 1, 0)
	rel := a.ok(a.do("POST", envPathOf(agent, env)+"/releases", admin, `{"candidate_version": 2, "percent": 10`+extra+`}`), 201)
	return rel["id"].(string)
}

func (a *app) releaseRevision(id string) int64 { return int64(a.release(id)["revision"].(float64)) }

// pauseRelease pauses (never gated): the move of the release-level cases.
func pauseRelease(a *app, _, _, ref string) {
	a.ok(a.do("POST", "/v1/releases/"+ref+"/pause", admin, ""), 200)
}

func TestGate_envRollbackToAnotherVersion_isAChangeRequest(t *testing.T) {
	checkGated(t, gatedWrite{
		setup: func(a *app, agent, env string) string {
			a.publish(agent, env, 1, 0)
			a.publish(agent, env, 2, a.pointerRevision(agent, env))
			a.publish(agent, env, 3, a.pointerRevision(agent, env)) // the default target is 2
			return ""
		},
		write: func(a *app, agent, env, _ string) *httptest.ResponseRecorder {
			return a.do("POST", envPathOf(agent, env)+"/rollback", admin,
				fmt.Sprintf(`{"to_version": 1, "expected_revision": %d}`, a.pointerRevision(agent, env)))
		},
		applied: func(a *app, agent, env, _ string) bool { return a.versionOf(agent, env) == 1 },
		move:    func(a *app, agent, env, _ string) { a.revoke(agent, env, 2) },
	})
}

func TestGate_liftRevocation_isAChangeRequest(t *testing.T) {
	checkGated(t, gatedWrite{
		setup: func(a *app, agent, env string) string {
			a.publish(agent, env, 2, 0)
			a.revoke(agent, env, 1)
			return ""
		},
		write: func(a *app, agent, env, _ string) *httptest.ResponseRecorder {
			return a.do("DELETE", envPathOf(agent, env)+"/revocations/1", admin, "")
		},
		applied: func(a *app, agent, env, _ string) bool { return !a.revoked(agent, env, 1) },
		move:    func(a *app, agent, env, _ string) { a.revoke(agent, env, 3) },
	})
}

func TestGate_releaseCreate_isAChangeRequestStoringNoRawOverrideIDs(t *testing.T) {
	releaseOf := func(a *app, agent, env string) string {
		var id string
		a.db.Raw(`SELECT id FROM releases WHERE agent = ? AND env = ?`, agent, env).Scan(&id)
		return id
	}
	checkGated(t, gatedWrite{
		setup: func(a *app, agent, env string) string { a.publish(agent, env, 1, 0); return "" },
		write: func(a *app, agent, env, _ string) *httptest.ResponseRecorder {
			rec := a.do("POST", envPathOf(agent, env)+"/releases", admin,
				`{"candidate_version": 2, "percent": 10, "overrides": {"candidate": ["alice@example.com"]}}`)
			if strings.Contains(rec.Body.String(), "alice") {
				a.t.Fatalf("a raw override id in the answer: %s", rec.Body)
			}
			return rec
		},
		applied: func(a *app, agent, env, _ string) bool {
			id := releaseOf(a, agent, env)
			if id == "" {
				return false
			}
			o := a.release(id)["overrides"].(map[string]any)
			return len(o["candidate"].([]any)) == 1
		},
		move: func(a *app, agent, env, _ string) { a.revoke(agent, env, 3) },
	})
}

func TestGate_percentIncrease_isAChangeRequest(t *testing.T) {
	checkGated(t, gatedWrite{
		setup: func(a *app, agent, env string) string { return a.releaseIn(agent, env, "") },
		write: func(a *app, _, _, ref string) *httptest.ResponseRecorder {
			return a.do("PATCH", "/v1/releases/"+ref, admin, fmt.Sprintf(`{"percent": 50, "expected_revision": %d}`, a.releaseRevision(ref)))
		},
		applied: func(a *app, _, _, ref string) bool { return a.release(ref)["percent"] == float64(50) },
		move:    pauseRelease,
	})
}

func TestGate_candidateOverridesAdded_isAChangeRequest(t *testing.T) {
	checkGated(t, gatedWrite{
		setup: func(a *app, agent, env string) string { return a.releaseIn(agent, env, "") },
		write: func(a *app, _, _, ref string) *httptest.ResponseRecorder {
			return a.do("PATCH", "/v1/releases/"+ref, admin,
				fmt.Sprintf(`{"overrides": {"candidate": ["bob"]}, "expected_revision": %d}`, a.releaseRevision(ref)))
		},
		applied: func(a *app, _, _, ref string) bool {
			o := a.release(ref)["overrides"].(map[string]any)
			return len(o["candidate"].([]any)) == 1
		},
		move: pauseRelease,
	})
}

func TestGate_resumeOfAReleaseItsGuardPaused_isAChangeRequest(t *testing.T) {
	checkGated(t, gatedWrite{
		setup: func(a *app, agent, env string) string {
			id := a.releaseIn(agent, env, `, "guard": {"metric": "failure_rate", "max_degradation": 2, "action": "pause"}`)
			pauseRelease(a, agent, env, id)
			// What the guard's trip writes with its pause.
			a.db.Exec(`UPDATE releases SET guard_tripped_at_ms = 1, guard_reason = 'failure rate up' WHERE id = ?`, id)
			return id
		},
		write: func(a *app, _, _, ref string) *httptest.ResponseRecorder {
			return a.do("POST", "/v1/releases/"+ref+"/resume", admin, "")
		},
		applied: func(a *app, _, _, ref string) bool { return a.release(ref)["state"] == "running" },
		move: func(a *app, _, _, ref string) {
			a.ok(a.do("PATCH", "/v1/releases/"+ref, admin, fmt.Sprintf(`{"percent": 5, "expected_revision": %d}`, a.releaseRevision(ref))), 200)
		},
	})
}

func TestGate_promote_isAChangeRequest(t *testing.T) {
	checkGated(t, gatedWrite{
		setup: func(a *app, agent, env string) string { return a.releaseIn(agent, env, "") },
		write: func(a *app, _, _, ref string) *httptest.ResponseRecorder {
			return a.do("POST", "/v1/releases/"+ref+"/promote", admin, "")
		},
		applied: func(a *app, agent, env, _ string) bool { return a.versionOf(agent, env) == 2 },
		move:    pauseRelease,
	})
}

func TestGate_pauseRevokeRollbacksAndDecrease_areNeverGated(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		a := newApp(t, db, withLeads)
		for i := range 3 {
			a.createVersion("support", i, fmt.Sprintf("v%d", i+1))
		}
		id := a.releaseIn("support", "prod", "")
		for i := range 2 {
			a.createVersion("billing", i, fmt.Sprintf("v%d", i+1))
		}
		a.publish("billing", "prod", 1, 0)
		a.publish("billing", "prod", 2, 1) // the default target is 1
		a.ok(a.do("PUT", "/v1/protections/prod", admin, `{"approvals": 1}`), 200)
		a.ok(a.do("PATCH", "/v1/releases/"+id, admin, fmt.Sprintf(`{"percent": 5, "expected_revision": %d}`, a.releaseRevision(id))), 200)
		a.ok(a.do("PATCH", "/v1/releases/"+id, admin, fmt.Sprintf(`{"overrides": {"baseline": ["carol"]}, "expected_revision": %d}`,
			a.releaseRevision(id))), 200)
		pauseRelease(a, "", "", id)
		a.ok(a.do("POST", "/v1/releases/"+id+"/resume", admin, ""), 200) // a person's pause
		a.ok(a.do("POST", "/v1/releases/"+id+"/rollback", admin, ""), 200)
		a.revoke("support", "prod", 3)
		// An env rollback to its default target, named.
		a.ok(a.do("POST", envPathOf("billing", "prod")+"/rollback", admin,
			fmt.Sprintf(`{"to_version": 1, "expected_revision": %d}`, a.pointerRevision("billing", "prod"))), 200)
		var pending int64
		a.db.Raw(`SELECT COUNT(*) FROM access_change_requests`).Scan(&pending)
		if pending != 0 || a.versionOf("billing", "prod") != 1 || a.versionOf("support", "prod") != 1 {
			t.Fatalf("%d change requests, billing at %d", pending, a.versionOf("billing", "prod"))
		}
	})
}

func (a *app) protectionApprovals(env string) int {
	var n int
	a.db.Raw(`SELECT approvals FROM access_protections WHERE env = ?`, env).Scan(&n)
	return n
}

func TestGate_weakeningAProtection_isApprovedUnderTheProtectionInForce(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		a := newApp(t, db, withLeads)
		// Creating one, and strengthening one in force, go ahead.
		a.ok(a.do("PUT", "/v1/protections/staging", admin, `{"approvals": 1}`), 200)
		a.ok(a.do("PUT", "/v1/protections/prod", admin, `{"approvals": 1, "expected_revision": 0}`), 200)
		a.ok(a.do("PUT", "/v1/protections/prod", admin, `{"approvals": 2, "expected_revision": 1}`), 200)

		// Fewer approvals: two approvals, as the protection in force asks.
		rec := a.do("PUT", "/v1/protections/prod", admin, `{"approvals": 1, "expected_revision": 2}`)
		cr := a.ok(rec, 202)["change_request"].(map[string]any)
		id := cr["id"].(string)
		if cr["action"] != "protection.set" || cr["approvals_needed"] != float64(2) || a.protectionApprovals("prod") != 2 {
			t.Fatalf("change request = %v, approvals in force %d", cr, a.protectionApprovals("prod"))
		}
		if got := a.ok(a.do("POST", "/v1/change-requests/"+id+"/approve", lead, ""), 200); got["state"] != "pending" {
			t.Fatalf("one of two approvals: %v", got)
		}
		got := a.ok(a.do("POST", "/v1/change-requests/"+id+"/approve", lead2, ""), 200)
		if got["state"] != "applied" || a.protectionApprovals("prod") != 1 {
			t.Fatalf("two of two approvals: %v, approvals in force %d", got, a.protectionApprovals("prod"))
		}
		problem(t, a.do("POST", "/v1/change-requests/"+id+"/approve", lead, ""), 409, "change_request_closed")

		// An approvers list added; the protection moves meanwhile.
		id = a.ok(a.do("PUT", "/v1/protections/prod", admin, `{"approvals": 1, "approvers": ["lead"], "expected_revision": 3}`), 202)["change_request"].(map[string]any)["id"].(string)
		a.ok(a.do("PUT", "/v1/protections/prod", admin, `{"approvals": 2, "expected_revision": 3}`), 200)
		// Raised to 2 meanwhile: the request needs two approvals now.
		if got := a.ok(a.do("POST", "/v1/change-requests/"+id+"/approve", lead, ""), 200); got["state"] != "pending" || got["approvals_needed"] != float64(2) {
			t.Fatalf("one approval after the protection was raised: %v", got)
		}
		got = a.ok(a.do("POST", "/v1/change-requests/"+id+"/approve", lead2, ""), 200)
		prob, _ := got["problem"].(map[string]any)
		if got["state"] != "failed" || prob["code"] != "revision_conflict" || a.protectionApprovals("prod") != 2 {
			t.Fatalf("after the protection moved: %v, approvals in force %d", got, a.protectionApprovals("prod"))
		}
		// Fewer agents covered, and lifting it, are change requests too.
		a.ok(a.do("PUT", "/v1/protections/prod", admin, `{"approvals": 2, "agents": ["support"]}`), 202)
		a.ok(a.do("PUT", "/v1/protections/prod", admin, `{"approvals": 0}`), 202)
		if a.protectionApprovals("prod") != 2 {
			t.Fatalf("approvals in force %d", a.protectionApprovals("prod"))
		}
		// DELETE lifts it: not in force, at once; in force, approved under it.
		if got := a.ok(a.do("DELETE", "/v1/protections/dev", admin, ""), 200); got["approvals"] != float64(0) {
			t.Fatalf("DELETE of no protection: %v", got)
		}
		problem(t, a.do("DELETE", "/v1/protections/prod", admin, "", "If-Match", `"1"`), 412, "precondition_failed")
		cr = a.ok(a.do("DELETE", "/v1/protections/prod", admin, "", "If-Match", `"4"`), 202)["change_request"].(map[string]any)
		id = cr["id"].(string)
		a.ok(a.do("POST", "/v1/change-requests/"+id+"/approve", lead, ""), 200)
		if got := a.ok(a.do("POST", "/v1/change-requests/"+id+"/approve", lead2, ""), 200); got["state"] != "applied" || a.protectionApprovals("prod") != 0 {
			t.Fatalf("DELETE approved: %v, approvals in force %d", got, a.protectionApprovals("prod"))
		}
	})
}

// A gated create with an Idempotency-Key: its 202 is recorded in the
// transaction that files the change request, so the request exists if and
// only if its answer does (a retry after a lost answer replays it, never
// files a second request). With the record's insert made to fail, no
// request is filed; the control: with it working, one request, replayed.
func TestGate_idempotentCreate_recordsThe202WithTheChangeRequest(t *testing.T) {
	db := testenv.OpenDB(t, sqlstore.Config{SQLitePath: filepath.Join(t.TempDir(), "promptd.db")}, migrations())
	var failRecord atomic.Bool
	if err := db.Callback().Raw().Before("gorm:raw").Register("test:fail_idempotency_record", func(tx *gorm.DB) {
		if failRecord.Load() && strings.HasPrefix(tx.Statement.SQL.String(), "INSERT INTO idempotency") {
			_ = tx.AddError(errors.New("injected: the record's insert fails"))
		}
	}); err != nil {
		t.Fatal(err)
	}
	a := protectedApp(t, db)
	pending := func() int {
		var n int
		a.db.Raw(`SELECT COUNT(*) FROM access_change_requests WHERE state = 'pending'`).Scan(&n)
		return n
	}
	body := `{"candidate_version": 2, "percent": 10}`
	failRecord.Store(true)
	if rec := a.do("POST", "/v1/agents/support/envs/prod/releases", admin, body, "Idempotency-Key", "k-fail"); rec.Code < 500 {
		t.Fatalf("with the record failing: %d %s", rec.Code, rec.Body)
	}
	if n := pending(); n != 0 {
		t.Fatalf("%d change requests filed although their answer was not recorded", n)
	}
	failRecord.Store(false)
	first := a.do("POST", "/v1/agents/support/envs/prod/releases", admin, body, "Idempotency-Key", "k-ok")
	again := a.do("POST", "/v1/agents/support/envs/prod/releases", admin, body, "Idempotency-Key", "k-ok")
	if first.Code != 202 || again.Code != 202 || again.Header().Get("Idempotent-Replayed") != "true" || again.Body.String() != first.Body.String() {
		t.Fatalf("first %d, repeat %d (replayed %q)\n%s\n%s", first.Code, again.Code, again.Header().Get("Idempotent-Replayed"), first.Body, again.Body)
	}
	if n := pending(); n != 1 {
		t.Fatalf("%d change requests pending, want 1", n)
	}
}
