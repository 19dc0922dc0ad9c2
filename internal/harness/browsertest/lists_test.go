package browsertest

import (
	"fmt"
	"testing"
)

// The agents page shows one page of the API's cursor at a time: 60 agents
// are 50, then "Next page" shows the other 10, and "Previous page" the 50
// again.
func TestAgents_aLongList_pagesWithTheAPIsCursor(t *testing.T) {
	srv := startServer(t)
	for i := 0; i < 60; i++ {
		srv.publish(fmt.Sprintf("agent-%02d", i), 0, "an agent")
	}
	tb := newTab(t, srv)
	tb.login(adminToken)
	rows := sel("agents") + " " + sel("agent-row")
	tb.waitSel(sel("agents", "data-loaded", "true") + " " + sel("agent-row"))
	first := tb.count(rows)
	if first != 50 {
		t.Fatalf("the first page lists %d agents, want 50 (the page size)", first)
	}
	if tb.visible(sel("agents")+" "+sel("pager-prev")) != 0 {
		t.Error("the first page offers a previous page")
	}
	tb.click(sel("agents") + " " + sel("pager-next"))
	tb.wait("the second page", `document.querySelectorAll(`+js(rows)+`).length === 10`)
	if tb.visible(sel("agents")+" "+sel("pager-next")) != 0 {
		t.Error("the last page offers a next page")
	}
	seen := eval[[]string](tb, `[...document.querySelectorAll(`+js(rows)+`)].map(e => e.dataset.agent)`)
	t.Logf("the second page: %v", seen)
	tb.click(sel("agents") + " " + sel("pager-prev"))
	tb.wait("the first page again", `document.querySelectorAll(`+js(rows)+`).length === 50`)
}
