package api_test

import (
	"fmt"
	"sync"
	"testing"

	"gorm.io/gorm"

	"github.com/promptd/promptd/api"
	"github.com/promptd/promptd/internal/harness/testenv"
)

// Two more admins, each its own principal.
const (
	lead  = "lead-admin-secret-0123456789"
	lead2 = "second-lead-secret-0123456789"
)

func withLeads(c *api.Config) {
	c.Tokens = append(append([]api.Token(nil), c.Tokens...),
		api.Token{Name: "lead", Role: api.RoleAdmin, Secret: lead}, api.Token{Name: "lead2", Role: api.RoleAdmin, Secret: lead2})
}

// protectedApp has support with versions 1..3, prod at 1, and prod
// protected (one approval).
func protectedApp(t *testing.T, db *gorm.DB) *app {
	a := newApp(t, db, withLeads)
	for i := range 3 {
		a.createVersion("support", i, fmt.Sprintf("v%d", i+1))
	}
	a.publish("support", "prod", 1, 0)
	a.ok(a.do("PUT", "/v1/protections/prod", admin, `{"approvals": 1, "expected_revision": 0}`), 200)
	return a
}

// requestSwitch asks for prod -> version at the pointer's revision and
// returns the change request id.
func (a *app) requestSwitch(version int) string {
	a.t.Helper()
	rev := a.pointerRevision("support", "prod")
	rec := a.do("PUT", "/v1/agents/support/envs/prod", admin, fmt.Sprintf(`{"version": %d, "expected_revision": %d}`, version, rev))
	body := a.ok(rec, 202)
	cr := body["change_request"].(map[string]any)
	if cr["state"] != "pending" || cr["target_revision"] != float64(rev) || rec.Header().Get("Location") != "/v1/change-requests/"+cr["id"].(string) {
		a.t.Fatalf("change request = %v (Location %q)", cr, rec.Header().Get("Location"))
	}
	return cr["id"].(string)
}

func (a *app) pointerVersion() int {
	var v int
	a.db.Raw(`SELECT version FROM prompt_env_pointers WHERE agent = 'support' AND env = 'prod'`).Scan(&v)
	return v
}

func TestChangeRequests_switchInProtectedEnv_appliesOnceOnAnotherPrincipalsApproval(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		a := protectedApp(t, db)
		id := a.requestSwitch(2)
		if v := a.pointerVersion(); v != 1 {
			t.Fatalf("a gated switch moved the pointer to %d", v)
		}
		problem(t, a.do("POST", "/v1/change-requests/"+id+"/approve", admin, ""), 403, "self_approval")
		// A token ops created is ops's principal too.
		mine := a.createToken(`{"name": "ops-laptop", "role": "admin"}`)
		problem(t, a.do("POST", "/v1/change-requests/"+id+"/approve", mine, ""), 403, "self_approval")

		cr := a.ok(a.do("POST", "/v1/change-requests/"+id+"/approve", lead, ""), 200)
		if cr["state"] != "applied" || a.pointerVersion() != 2 {
			t.Fatalf("after the approval: %v, pointer at %d", cr, a.pointerVersion())
		}
		p := problem(t, a.do("POST", "/v1/change-requests/"+id+"/approve", lead2, ""), 409, "change_request_closed")
		if p["state"] != "applied" {
			t.Fatalf("closed state = %v", p["state"])
		}
		var moves, applied int64
		a.db.Raw(`SELECT COUNT(*) FROM prompt_pointer_moves WHERE agent = 'support' AND env = 'prod'`).Scan(&moves)
		a.db.Raw(`SELECT COUNT(*) FROM audit_events WHERE action = 'change_request.applied'`).Scan(&applied)
		if moves != 2 || applied != 1 {
			t.Fatalf("moves = %d (want 2: create, the approved switch), applied events = %d", moves, applied)
		}
		got := a.ok(a.do("GET", "/v1/change-requests/"+id, admin, ""), 200)
		if got["state"] != "applied" || fmt.Sprint(got["approvals"]) != "[lead]" {
			t.Fatalf("GET = %v", got)
		}
		list := a.ok(a.do("GET", "/v1/change-requests?state=applied", admin, ""), 200)
		if len(list["items"].([]any)) != 1 {
			t.Fatalf("list = %v", list)
		}
	})
}

func TestChangeRequests_twoApproversRacing_applyOnce(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		a := protectedApp(t, db)
		for round := range 5 {
			id := a.requestSwitch(2 + round%2)
			var wg sync.WaitGroup
			codes := make([]int, 2)
			for i, tok := range []string{lead, lead2} {
				wg.Go(func() { codes[i] = a.do("POST", "/v1/change-requests/"+id+"/approve", tok, "").Code })
			}
			wg.Wait()
			ok := 0
			for _, c := range codes {
				if c == 200 {
					ok++
				} else if c != 409 {
					t.Fatalf("round %d: approvals answered %v", round, codes)
				}
			}
			var applied int64
			a.db.Raw(`SELECT COUNT(*) FROM audit_events WHERE action = 'change_request.applied' AND resource = ?`, "change_request/"+id).Scan(&applied)
			if ok != 1 || applied != 1 || a.pointerVersion() != 2+round%2 {
				t.Fatalf("round %d: %v, applied %d times, pointer at %d", round, codes, applied, a.pointerVersion())
			}
		}
	})
}

func TestChangeRequests_targetMovedMeanwhile_failsWithRevisionConflict(t *testing.T) {
	a := protectedApp(t, nil2(t))
	id := a.requestSwitch(2)
	// The pointer moves meanwhile (the protection lifted for it: lifting
	// is a change request of its own).
	lift := a.ok(a.do("PUT", "/v1/protections/prod", admin, `{"approvals": 0, "expected_revision": 1}`), 202)
	a.ok(a.do("POST", "/v1/change-requests/"+lift["change_request"].(map[string]any)["id"].(string)+"/approve", lead2, ""), 200)
	a.publish("support", "prod", 3, a.pointerRevision("support", "prod"))
	a.ok(a.do("PUT", "/v1/protections/prod", admin, `{"approvals": 1, "expected_revision": 2}`), 200)

	cr := a.ok(a.do("POST", "/v1/change-requests/"+id+"/approve", lead, ""), 200)
	prob, _ := cr["problem"].(map[string]any)
	if cr["state"] != "failed" || prob["code"] != "revision_conflict" || a.pointerVersion() != 3 {
		t.Fatalf("approval of a stale request: %v, pointer at %d", cr, a.pointerVersion())
	}
	problem(t, a.do("POST", "/v1/change-requests/"+id+"/approve", lead2, ""), 409, "change_request_closed")
}

func TestChangeRequests_rejectAndCancel_closeWithoutApplying(t *testing.T) {
	a := protectedApp(t, nil2(t))
	id := a.requestSwitch(2)
	problem(t, a.do("POST", "/v1/change-requests/"+id+"/cancel", lead, ""), 403, "forbidden") // not the requester
	a.ok(a.do("POST", "/v1/change-requests/"+id+"/reject", lead, ""), 200)
	problem(t, a.do("POST", "/v1/change-requests/"+id+"/approve", lead2, ""), 409, "change_request_closed")
	id = a.requestSwitch(2)
	a.ok(a.do("POST", "/v1/change-requests/"+id+"/cancel", admin, ""), 200)
	if a.pointerVersion() != 1 {
		t.Fatalf("pointer moved to %d", a.pointerVersion())
	}
	problem(t, a.do("POST", "/v1/change-requests/cr_nope/approve", lead, ""), 404, "change_request_not_found")
}

// nil2 is a fresh SQLite database.
func nil2(t *testing.T) *gorm.DB {
	return sqliteApp(t).db
}
