package api_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/internal/harness/testenv"
)

// readFault makes the reads of db that match fail as a SQL timeout does,
// while on is set: outside a transaction only (outside), or reads of one
// table anywhere. It is installed once, before anything uses db (gorm's
// callbacks are not safe to register concurrently with queries), and then
// switched.
type readFault struct {
	on   atomic.Bool
	mode atomic.Pointer[faultMode]
}

type faultMode struct {
	outside bool
	table   string
}

func installReadFault(t *testing.T, db *gorm.DB, f *readFault) {
	t.Helper()
	fail := func(tx *gorm.DB) {
		m := f.mode.Load()
		if !f.on.Load() || m == nil {
			return
		}
		_, inTx := tx.Statement.ConnPool.(gorm.TxCommitter)
		q := tx.Statement.SQL.String()
		if !strings.HasPrefix(strings.TrimSpace(strings.ToUpper(q)), "SELECT") {
			return
		}
		if m.outside && inTx || m.table != "" && !strings.Contains(q, m.table) {
			return
		}
		if rows, ok := tx.Statement.Dest.(*sql.Rows); ok {
			_ = rows.Close()
		}
		_ = tx.AddError(fmt.Errorf("injected read fault: %w", context.DeadlineExceeded))
	}
	for _, err := range []error{
		db.Callback().Query().After("gorm:query").Register(fmt.Sprintf("test:read_fault_query_%p", f), fail),
		db.Callback().Row().After("gorm:row").Register(fmt.Sprintf("test:read_fault_row_%p", f), fail),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// lockedWrite is a gated write for the fail-closed cases: setup prepares
// it in a protected env, write makes it, applied tells whether it went
// through.
type lockedWrite struct {
	name    string
	setup   func(a *app, agent, env string) string
	write   func(a *app, agent, env, ref string) *httptest.ResponseRecorder
	applied func(a *app, agent, env, ref string) bool
}

func lockedWrites() []lockedWrite {
	return []lockedWrite{
		{name: "pointer switch",
			setup: func(a *app, agent, env string) string { a.publish(agent, env, 1, 0); return "" },
			write: func(a *app, agent, env, _ string) *httptest.ResponseRecorder {
				return a.do("PUT", envPathOf(agent, env), admin, `{"version": 3, "expected_revision": 1}`)
			},
			applied: func(a *app, agent, env, _ string) bool { return a.versionOf(agent, env) == 3 }},
		{name: "env rollback to another version",
			setup: func(a *app, agent, env string) string {
				a.publish(agent, env, 1, 0)
				a.publish(agent, env, 2, 1)
				a.publish(agent, env, 3, 2)
				return ""
			},
			write: func(a *app, agent, env, _ string) *httptest.ResponseRecorder {
				return a.do("POST", envPathOf(agent, env)+"/rollback", admin, `{"to_version": 1, "expected_revision": 3}`)
			},
			applied: func(a *app, agent, env, _ string) bool { return a.versionOf(agent, env) == 1 }},
		{name: "lift a revocation",
			setup: func(a *app, agent, env string) string {
				a.publish(agent, env, 1, 0)
				a.revoke(agent, env, 2)
				return ""
			},
			write: func(a *app, agent, env, _ string) *httptest.ResponseRecorder {
				return a.do("DELETE", envPathOf(agent, env)+"/revocations/2", admin, "")
			},
			applied: func(a *app, agent, env, _ string) bool { return !a.revoked(agent, env, 2) }},
		{name: "release create",
			setup: func(a *app, agent, env string) string { a.publish(agent, env, 1, 0); return "" },
			write: func(a *app, agent, env, _ string) *httptest.ResponseRecorder {
				return a.do("POST", envPathOf(agent, env)+"/releases", admin, `{"candidate_version": 2, "percent": 10}`)
			},
			applied: func(a *app, agent, env, _ string) bool {
				var n int64
				a.db.Raw(`SELECT COUNT(*) FROM releases WHERE agent = ? AND env = ?`, agent, env).Scan(&n)
				return n > 0
			}},
		{name: "percent increase",
			setup: func(a *app, agent, env string) string { return a.releaseIn(agent, env, "") },
			write: func(a *app, _, _, ref string) *httptest.ResponseRecorder {
				return a.do("PATCH", "/v1/releases/"+ref, admin, `{"percent": 50, "expected_revision": 1}`)
			},
			applied: func(a *app, _, _, ref string) bool { return a.release(ref)["percent"] == "50" }},
		{name: "resume of a release its guard paused",
			setup: func(a *app, agent, env string) string {
				id := a.releaseIn(agent, env, `, "guard": {"metric": "failure_rate", "max_degradation": 2, "action": "pause"}`)
				pauseRelease(a, agent, env, id)
				a.db.Exec(`UPDATE releases SET guard_tripped_at_ms = 1, guard_reason = 'failure rate up', paused_by_guard_at_ms = 1 WHERE id = ?`, id)
				return id
			},
			write: func(a *app, _, _, ref string) *httptest.ResponseRecorder {
				return a.do("POST", "/v1/releases/"+ref+"/resume", admin, "")
			},
			applied: func(a *app, _, _, ref string) bool { return a.release(ref)["state"] == "running" }},
		{name: "promote",
			setup: func(a *app, agent, env string) string { return a.releaseIn(agent, env, "") },
			write: func(a *app, _, _, ref string) *httptest.ResponseRecorder {
				return a.do("POST", "/v1/releases/"+ref+"/promote", admin, "")
			},
			applied: func(a *app, agent, env, _ string) bool { return a.versionOf(agent, env) == 2 }},
	}
}

// A gated write whose reads fail (a SQL timeout under load) is refused
// and writes nothing: it used to read its target outside its transaction
// and take a failed read for "not gated". The second fault makes the
// protection row itself unreadable, inside the write's transaction too.
func TestGate_whenReadsFail_gatedWritesAreRefusedAndWriteNothing(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		fault := &readFault{}
		installReadFault(t, db, fault)
		a := newApp(t, db, withLeads)
		for _, mode := range []*faultMode{{outside: true}, {table: "access_protections"}} {
			fault.mode.Store(mode)
			kind := "reads outside a transaction"
			if mode.table != "" {
				kind = "reads of " + mode.table
			}
			for i, w := range lockedWrites() {
				agent := fmt.Sprintf("locked-%d-%t", i, mode.outside)
				i := i + len(mode.table)*10
				for v := range 3 {
					a.createVersion(agent, v, fmt.Sprintf("v%d", v+1))
				}
				env := fmt.Sprintf("prod%d", i)
				ref := w.setup(a, agent, env)
				a.ok(a.do("PUT", "/v1/protections/"+env, admin, `{"approvals": 1}`), 200)
				fault.on.Store(true)
				rec := w.write(a, agent, env, ref)
				fault.on.Store(false)
				if rec.Code/100 == 2 && rec.Code != 202 { // 202: gated, decided in the write's transaction
					t.Errorf("%s, %s failing: status %d, want 202 or a refusal; body %s", w.name, kind, rec.Code, rec.Body)
				}
				if rec.Code == 500 {
					t.Errorf("%s, %s failing: 500 %s", w.name, kind, rec.Body)
				}
				if w.applied(a, agent, env, ref) {
					t.Errorf("%s, %s failing: the write went through in a protected env without a change request", w.name, kind)
				}
				var n int64
				a.db.Raw(`SELECT COUNT(*) FROM access_change_requests WHERE agent = ?`, agent).Scan(&n)
				if n != 0 && rec.Code != 202 {
					t.Errorf("%s: %d change requests after a refusal", w.name, n)
				}
				// The control: with reads working the same write is a change request.
				if rec.Code == 202 {
					continue
				}
				if rec := w.write(a, agent, env, ref); rec.Code != 202 {
					t.Errorf("%s, reads working: status %d, want 202; body %s", w.name, rec.Code, rec.Body)
				}
			}
			fault.on.Store(false)
		}
	})
}

// A weakening PUT racing a strengthening one, with an expected_revision
// one ahead of the protection it read, used to be compared against that
// unlocked read (a stale precondition: not gated) and then apply on top
// of the strengthened row: the protection lifted with no approval.
func TestGate_weakeningRacingAStrengthening_isNeverAppliedWithoutApproval(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		a := newApp(t, db, withLeads)
		// Which PUT lands first depends on the machine's timing, so the
		// start offsets sweep both ways (even rounds delay the
		// strengthening, odd rounds the weakening, by up to 3.75 ms) and
		// the rounds go on until enough of them had the weakening land
		// second: that is the interleaving under test.
		const minRounds, maxRounds, wantGated = 40, 400, 5
		lifted, gated, rounds := 0, 0, 0
		for i := 0; i < maxRounds && (i < minRounds || gated < wantGated); i++ {
			rounds++
			env := fmt.Sprintf("race%d", i)
			a.ok(a.do("PUT", "/v1/protections/"+env, admin, `{"approvals": 2, "expected_revision": 0}`), 200)
			delay := time.Duration(i/2%16) * 250 * time.Microsecond
			weakDelay, strongDelay := time.Duration(0), delay
			if i%2 == 1 {
				weakDelay, strongDelay = delay, 0
			}
			var wg sync.WaitGroup
			var weak *httptest.ResponseRecorder
			wg.Add(2)
			go func() {
				defer wg.Done()
				time.Sleep(weakDelay)
				weak = a.do("PUT", "/v1/protections/"+env, admin, `{"approvals": 0, "expected_revision": 2}`)
			}()
			go func() {
				defer wg.Done()
				time.Sleep(strongDelay)
				a.do("PUT", "/v1/protections/"+env, admin, `{"approvals": 3, "expected_revision": 1}`)
			}()
			wg.Wait()
			if weak.Code == 500 {
				t.Fatalf("round %d: 500 %s", i, weak.Body)
			}
			if weak.Code == 202 {
				gated++
			}
			if a.protectionApprovals(env) == 0 {
				lifted++
				t.Errorf("round %d: the protection was lifted without approval (weakening PUT answered %d)", i, weak.Code)
			}
		}
		t.Logf("%d rounds: %d weakening PUTs gated, %d lifted without approval", rounds, gated, lifted)
		if gated == 0 {
			t.Fatalf("no round had the weakening PUT land after the strengthening: the race was never run")
		}
	})
}

// A release its guard paused stays "paused by its guard" whatever becomes
// of the guard: removing or replacing the guard is gated while it is, and
// so is its resume after the guard is gone (it used to be erased by
// PATCH {"guard": null}, never gated, and the resume then went through).
func TestGate_guardPausedRelease_guardRemovalAndLaterResumeAreGated(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		a := newApp(t, db, withLeads)
		for v := range 3 {
			a.createVersion("support", v, fmt.Sprintf("v%d", v+1))
		}
		id := a.releaseIn("support", "prod", `, "guard": {"metric": "failure_rate", "max_degradation": 2, "action": "pause"}`)
		a.ok(a.do("PUT", "/v1/protections/prod", admin, `{"approvals": 1}`), 200)
		if got := a.release(id)["paused_by_guard"]; got != false {
			t.Fatalf("paused_by_guard of a running release = %v", got)
		}
		trip(t, a, id)
		if got := a.release(id); got["paused_by_guard"] != true || got["state"] != "paused" {
			t.Fatalf("after the trip: state %v, paused_by_guard %v", got["state"], got["paused_by_guard"])
		}
		rev := a.releaseRevision(id)
		rec := a.do("PATCH", "/v1/releases/"+id, admin, fmt.Sprintf(`{"guard": null, "expected_revision": %d}`, rev))
		cr := a.ok(rec, 202)["change_request"].(map[string]any)
		if a.release(id)["guard"] == nil {
			t.Fatal("the guard was removed before the approval")
		}
		rec = a.do("PATCH", "/v1/releases/"+id, admin, fmt.Sprintf(`{"guard": {"metric": "failure_rate", "max_degradation": 50, "action": "pause"}, "expected_revision": %d}`, rev))
		a.ok(rec, 202)
		// Approved, the guard goes; the release stays paused by its guard.
		a.ok(a.do("POST", "/v1/change-requests/"+cr["id"].(string)+"/approve", lead, ""), 200)
		got := a.release(id)
		if got["guard"] != nil || got["paused_by_guard"] != true {
			t.Fatalf("after the approved removal: guard %v, paused_by_guard %v", got["guard"], got["paused_by_guard"])
		}
		rec = a.do("POST", "/v1/releases/"+id+"/resume", admin, "")
		resume := a.ok(rec, 202)["change_request"].(map[string]any)
		if a.release(id)["state"] != "paused" {
			t.Fatal("resumed without approval")
		}
		a.ok(a.do("POST", "/v1/change-requests/"+resume["id"].(string)+"/approve", lead, ""), 200)
		if got := a.release(id); got["state"] != "running" || got["paused_by_guard"] != false {
			t.Fatalf("after the approved resume: state %v, paused_by_guard %v", got["state"], got["paused_by_guard"])
		}
		// The control: a release paused by hand resumes at once.
		pauseRelease(a, "support", "prod", id)
		a.ok(a.do("POST", "/v1/releases/"+id+"/resume", admin, ""), 200)
	})
}

// trip makes release id's guard trip for real: outcomes that show the
// candidate failing, then the guard evaluator.
func trip(t *testing.T, a *app, id string) {
	t.Helper()
	a.ok(a.do("POST", "/v1/outcomes", runtime, outcomesBody(id, "baseline", 1, 300, 0, "bucket")), 200)
	a.ok(a.do("POST", "/v1/outcomes", runtime, outcomesBody(id, "candidate", 2, 300, 150, "bucket")), 200)
	if n, err := a.releases.RunGuards(context.Background()); err != nil || n != 1 {
		t.Fatalf("RunGuards = %d, %v; want one trip", n, err)
	}
}

// Raising a protection's approvals reaches the requests already pending:
// they need the higher count too (they used to apply at the count they
// were filed with).
func TestGate_protectionRaised_pendingRequestsNeedTheHigherCount(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		a := newApp(t, db, withLeads)
		for v := range 3 {
			a.createVersion("support", v, fmt.Sprintf("v%d", v+1))
		}
		a.publish("support", "prod", 1, 0)
		a.ok(a.do("PUT", "/v1/protections/prod", admin, `{"approvals": 1}`), 200)
		cr := a.ok(a.do("PUT", envPathOf("support", "prod"), admin, `{"version": 2, "expected_revision": 1}`), 202)["change_request"].(map[string]any)
		id := cr["id"].(string)
		a.ok(a.do("PUT", "/v1/protections/prod", admin, `{"approvals": 2, "expected_revision": 1}`), 200)
		got := a.ok(a.do("POST", "/v1/change-requests/"+id+"/approve", lead, ""), 200)
		if got["state"] != "pending" || got["approvals_needed"] != float64(2) || a.versionOf("support", "prod") != 1 {
			t.Fatalf("one approval after the protection was raised to 2: state %v, needed %v, version %d",
				got["state"], got["approvals_needed"], a.versionOf("support", "prod"))
		}
		got = a.ok(a.do("POST", "/v1/change-requests/"+id+"/approve", lead2, ""), 200)
		if got["state"] != "applied" || a.versionOf("support", "prod") != 2 {
			t.Fatalf("two approvals: state %v, version %d", got["state"], a.versionOf("support", "prod"))
		}
	})
}
