package browsertest

import (
	"strings"
	"testing"
)

func TestChangeRequest_approvedInTheBrowser_appliesTheGatedSwitch(t *testing.T) {
	srv := startServer(t)
	srv.publish("support", 0, "support v1")
	srv.publish("support", 1, "support v2")
	srv.point("support", "prod", 1)
	srv.must(200, "PUT", "/v1/protections/prod", map[string]any{"approvals": 1})

	// ops asks: in a protected env the switch becomes a change request.
	requester := newTab(t, srv)
	requester.login(adminToken)
	requester.open("/ui/agents/support/envs/prod")
	requester.wait("the pointer", `document.querySelector('[data-testid=env-pointer][data-revision="1"]')`)
	requester.fill(sel("switch-version"), "2")
	requester.fill(sel("switch-reason"), "ship v2")
	requester.click(sel("switch-submit"))
	requester.waitSel(sel("change-request-notice"))
	if v, r := srv.pointer("support", "prod"); v != 1 || r != 1 {
		t.Fatalf("a gated switch moved the pointer to v%d rev %d", v, r)
	}
	crs := srv.must(200, "GET", "/v1/change-requests?state=pending", nil)["items"].([]any)
	if len(crs) != 1 {
		t.Fatalf("pending change requests: %v, want 1", crs)
	}
	id := crs[0].(map[string]any)["id"].(string)
	row := sel("cr-row", "data-cr-id", id)

	// The control: the requester cannot approve their own request.
	requester.click(sel("change-request-notice") + " " + sel("change-request-link"))
	requester.wait("the change requests page", `location.pathname === '/ui/change-requests' && document.querySelector(`+js(row)+`)`)
	requester.click(row + " " + sel("cr-approve"))
	requester.wait("the self-approval refused", `document.querySelector('[data-testid=form-error][data-code=self_approval], [data-testid=page-error][data-code=self_approval]')`)
	if st := srv.must(200, "GET", "/v1/change-requests/"+id, nil)["state"]; st != "pending" {
		t.Fatalf("after a refused self-approval the request is %v, want pending", st)
	}

	// Another admin approves it in their own browser session.
	approver := newTab(t, srv)
	approver.login(approverToken)
	approver.open("/ui/change-requests")
	approver.waitSel(row + `[data-state="pending"]`)
	approver.screenshot("pending")
	approver.click(row + " " + sel("cr-approve"))
	// The list shows pending requests: the applied one leaves it, and the
	// state filter finds it applied.
	approver.wait("the request gone from the pending list", `!document.querySelector(`+js(row)+`)`)
	if msg := eval[string](approver, `document.querySelector('main').innerText`); !strings.Contains(msg, "approved and applied") {
		t.Errorf("no 'approved and applied' notice after the approval: %.300s", msg)
	}
	approver.fill(sel("cr-filter-state"), "applied")
	approver.click(sel("cr-filter-submit"))
	approver.wait("the request listed as applied", `document.querySelector(`+js(row+`[data-state="applied"]`)+`)`)
	if v, r := srv.pointer("support", "prod"); v != 2 || r != 2 {
		t.Errorf("after the approval the pointer is v%d rev %d, want v2 rev 2", v, r)
	}
	if st := srv.must(200, "GET", "/v1/change-requests/"+id, nil)["state"]; st != "applied" {
		t.Errorf("after the approval the request is %v, want applied", st)
	}
	if n := approver.visible(row + " " + sel("cr-approve")); n != 0 {
		t.Error("an applied request still offers approve")
	}
}
