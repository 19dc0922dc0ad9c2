package browsertest

import (
	"fmt"
	"sort"
	"testing"
)

// The lists of sessions and boards, and the audit log by actor (issue 17):
// each page shows what the API lists for the logged-in token, across
// pages, not what one page of the audit log happened to hold.

// rows is the sorted data-<attr> of the rows of testid.
func (tb *tab) rows(testid, attr string) []string {
	tb.t.Helper()
	out := eval[[]string](tb, `[...document.querySelectorAll('[data-testid=`+testid+`]')].map(e => e.getAttribute(`+js("data-"+attr)+`))`)
	sort.Strings(out)
	return out
}

func TestConsoleLists_sessionsPage_listsTheTokensSessions_filteredAndScoped(t *testing.T) {
	srv := startServer(t)
	for _, agent := range []string{"support", "billing"} {
		srv.point(agent, "prod", srv.publish(agent, 0, agent+" v1"))
	}
	var support []string
	for i, agent := range []string{"support", "billing", "support"} {
		id := fmt.Sprintf("chat-%d", i)
		srv.mustAs(runtimeToken, 201, "POST", "/v1/sessions", map[string]any{"session_id": id, "agent": agent, "env": "prod"})
		if agent == "support" {
			support = append(support, id)
		}
	}
	srv.mustAs(runtimeToken, 200, "POST", "/v1/sessions/chat-2/lease", map[string]any{"holder": "worker-9", "ttl_ms": 60000})
	scoped := srv.must(201, "POST", "/v1/tokens", map[string]any{"name": "support-rt", "role": "runtime",
		"scopes": map[string]any{"agents": []string{"support"}}})["secret"].(string)

	// A scoped runtime token (which may not read the audit log) sees its
	// agent's sessions.
	tb := newTab(t, srv)
	tb.login(scoped)
	tb.open("/ui/sessions")
	tb.waitSel(sel("sessions", "data-loaded", "true"))
	if got := tb.rows("session-row", "session-id"); fmt.Sprint(got) != fmt.Sprint(support) {
		t.Errorf("the support-scoped token's sessions page lists %v, want %v", got, support)
	}
	if lease := tb.text(sel("session-row", "data-session-id", "chat-2")); !contains(lease, "worker-9") {
		t.Errorf("the leased session's row %q does not name its holder worker-9", lease)
	}
	// The control: the unscoped admin sees all three, and the agent filter.
	admin := newTab(t, srv)
	admin.login(adminToken)
	admin.open("/ui/sessions")
	admin.waitSel(sel("sessions", "data-loaded", "true"))
	if n := admin.count(sel("session-row")); n != 3 {
		t.Errorf("the admin's sessions page lists %d sessions, want 3", n)
	}
	admin.open("/ui/sessions?agent=billing")
	admin.waitSel(sel("sessions", "data-loaded", "true"))
	if got := admin.rows("session-row", "session-id"); fmt.Sprint(got) != "[chat-1]" {
		t.Errorf("agent=billing lists %v, want [chat-1]", got)
	}
}

func TestConsoleLists_boardsPage_listsBoardsWithRecordsPerState(t *testing.T) {
	srv := startServer(t)
	for _, b := range []string{"alpha", "alpha", "beta"} {
		srv.mustAs(runtimeToken, 201, "POST", "/v1/boards/"+b+"/records", map[string]any{"payload": map[string]any{}})
	}
	srv.mustAs(runtimeToken, 200, "POST", "/v1/boards/alpha/claim", map[string]any{"holder": "agent-a"})
	tb := newTab(t, srv)
	tb.login(runtimeToken)
	tb.open("/ui/boards")
	tb.waitSel(sel("boards", "data-loaded", "true"))
	if got := tb.rows("board-row", "board"); fmt.Sprint(got) != "[alpha beta]" {
		t.Errorf("the boards page lists %v, want [alpha beta]", got)
	}
	for _, c := range []struct{ board, state, want string }{{"alpha", "pending", "1"}, {"alpha", "claimed", "1"}, {"beta", "pending", "1"}, {"beta", "done", "0"}} {
		css := sel("board-row", "data-board", c.board) + " li[data-state=" + c.state + "]"
		if got := tb.attr(css, "data-count"); got != c.want {
			t.Errorf("board %s, state %s: %q records shown, want %s", c.board, c.state, got, c.want)
		}
	}
}

// The actor filter is the API's: an actor whose events are all older than
// the newest page of the log is still found.
func TestConsoleLists_auditByActor_findsEventsBeyondTheNewestPage(t *testing.T) {
	srv := startServer(t)
	srv.point("support", "prod", srv.publish("support", 0, "support v1")) // by ops
	for i := range 55 {
		srv.mustAs(runtimeToken, 201, "POST", "/v1/sessions", map[string]any{"session_id": fmt.Sprintf("s-%d", i), "agent": "support", "env": "prod"})
	}
	tb := newTab(t, srv)
	tb.login(adminToken)
	tb.open("/ui/audit?actor=ops")
	tb.waitSel(sel("audit", "data-loaded", "true"))
	actions := tb.rows("audit-row", "action")
	// newest first: ops's console login (audited), its switch, its version
	if fmt.Sprint(actions) != "[console.login pointer.switched version.created]" {
		t.Errorf("actor=ops lists the actions %v, want [console.login pointer.switched version.created]", actions)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
