package browsertest

import (
	"strings"
	"testing"
)

func TestEnvSwitch_fromAStaleTab_showsTheRevisionConflict(t *testing.T) {
	srv := startServer(t)
	for i := 0; i < 3; i++ {
		srv.publish("support", i, "support v"+string(rune('1'+i)))
	}
	srv.point("support", "prod", 1)
	const envPage = "/ui/agents/support/envs/prod"
	pointerIs := func(version, revision string) string {
		return `(e => e && e.dataset.version === '` + version + `' && e.dataset.revision === '` + revision + `')(document.querySelector('[data-testid=env-pointer]'))`
	}
	expected := func(tb *tab) string {
		return eval[string](tb, `document.querySelector('[data-testid=switch-expected-revision]').value`)
	}

	stale := newTab(t, srv)
	stale.login(adminToken)
	stale.open(envPage)
	stale.wait("the pointer at version 1, revision 1", pointerIs("1", "1"))
	if rev := expected(stale); rev != "1" {
		t.Errorf("switch-expected-revision shows %q, want 1", rev)
	}
	stale.fill(sel("switch-version"), "3")

	// Another tab of the same user switches first.
	other := stale.sibling()
	other.open(envPage)
	other.wait("the pointer in the other tab", pointerIs("1", "1"))
	other.fill(sel("switch-version"), "2")
	other.fill(sel("switch-reason"), "the other tab")
	other.click(sel("switch-submit"))
	other.wait("the other tab's switch applied", pointerIs("2", "2"))
	if v, r := srv.pointer("support", "prod"); v != 2 || r != 2 {
		t.Fatalf("after the other tab's switch the pointer is v%d rev %d, want v2 rev 2", v, r)
	}

	// The first tab hears of the move (live update) but keeps the revision
	// its user decided on: its decision is stale, and its switch is refused.
	stale.wait("the move seen in the stale tab", pointerIs("2", "2"))
	if rev := expected(stale); rev != "1" {
		t.Fatalf("the stale tab's expected revision became %q: a switch from it would not be checked against what its user saw", rev)
	}
	stale.fill(sel("switch-reason"), "the stale tab")
	stale.click(sel("switch-submit"))
	stale.wait("the conflict", `(e => e && e.getClientRects().length > 0)(document.querySelector('[data-testid=conflict]'))`)
	if cur := stale.attr(sel("conflict"), "data-current-revision"); cur != "2" {
		t.Errorf("conflict data-current-revision %q, want 2", cur)
	}
	if role := eval[string](stale, `(document.querySelector('[data-testid=conflict]').closest('[role=alert]') || {}).getAttribute?.('role') || ''`); role != "alert" {
		t.Errorf("the conflict is not in a role=alert region (announced)")
	}
	msg := stale.text(sel("conflict"))
	if !strings.Contains(msg, "revision 2") || !strings.Contains(msg, "revision 1") {
		t.Errorf("the conflict message does not name the expected and the current revision: %q", msg)
	}
	stale.screenshot("conflict")
	if v, r := srv.pointer("support", "prod"); v != 2 || r != 2 {
		t.Fatalf("after the refused switch the pointer is v%d rev %d, want v2 rev 2 (unchanged)", v, r)
	}

	// The control: reloaded, the same switch goes through.
	stale.click(sel("conflict-reload"))
	stale.wait("the expected revision reloaded", `document.querySelector('[data-testid=switch-expected-revision]').value === '2'`)
	if v := eval[string](stale, `document.querySelector('[data-testid=switch-version]').value`); v != "3" {
		t.Errorf("after reload switch-version is %q, want the chosen 3 kept", v)
	}
	stale.click(sel("switch-submit"))
	stale.wait("the switch to 3 applied", pointerIs("3", "3"))
	if n := stale.visible(sel("conflict")); n != 0 {
		t.Errorf("the conflict is still shown after a successful switch")
	}
	if v, r := srv.pointer("support", "prod"); v != 3 || r != 3 {
		t.Errorf("after the reloaded switch the pointer is v%d rev %d, want v3 rev 3", v, r)
	}
}
