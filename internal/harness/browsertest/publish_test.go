package browsertest

import (
	"strings"
	"testing"
)

func TestPublish_theNewVersionAppears_andTheDiffHighlightsTheChange(t *testing.T) {
	srv := startServer(t)
	tb := newTab(t, srv)
	tb.login(adminToken)

	// Published through the API while the agents page is open: the page
	// shows it without a reload (live update, or its polling fallback).
	srv.publish("support", 0, "You are a helpful assistant for ACME.\nAnswer briefly.")
	tb.wait("the new agent in the list", `document.querySelector('[data-testid=agent-row][data-agent=support]')`)
	tb.click(sel("agent-row", "data-agent", "support") + " " + sel("agent-link"))
	tb.wait("the agent page", `location.pathname === '/ui/agents/support' && document.querySelector('[data-testid=version-row][data-version="1"]')`)

	srv.publish("support", 1, "You are a helpful assistant for ACME.\nAnswer in two sentences.")
	tb.wait("version 2 on the agent page", `document.querySelector('[data-testid=version-row][data-version="2"]')`)
	tb.open("/ui/agents/support?version=2")
	tb.wait("version 2's config", `document.querySelector('[data-testid=config-view][data-version="2"]')`)
	if sys := tb.text(sel("config-system")); !strings.Contains(sys, "Answer in two sentences.") {
		t.Errorf("config-system of version 2: %q", sys)
	}
	if model := tb.text(sel("config-model")); !strings.Contains(model, "gpt-4o") {
		t.Errorf("config-model: %q, want gpt-4o in it", model)
	}

	// Choose the two sides on the versions list and compare.
	tb.click(sel("version-row", "data-version", "1") + " " + sel("diff-a"))
	tb.click(sel("version-row", "data-version", "2") + " " + sel("diff-b"))
	tb.click(sel("diff-compare"))
	tb.wait("the diff page", `location.pathname === '/ui/agents/support/diff' && document.querySelector('[data-testid=diff-view]')`)
	if a, b := tb.attr(sel("diff-view"), "data-a"), tb.attr(sel("diff-view"), "data-b"); a != "1" || b != "2" {
		t.Errorf("diff-view compares %s and %s, want 1 and 2", a, b)
	}
	del := eval[[]string](tb, `[...document.querySelectorAll('[data-testid=diff-line-del]')].map(e => e.textContent)`)
	add := eval[[]string](tb, `[...document.querySelectorAll('[data-testid=diff-line-add]')].map(e => e.textContent)`)
	if !anyContains(del, "Answer briefly.") || !anyContains(add, "Answer in two sentences.") {
		t.Errorf("diff lines: removed %q, added %q; want the old sentence removed and the new one added", del, add)
	}
	// Highlighted, and not by colour alone: the lines are <del>/<ins> with a
	// background of their own and a -/+ marker.
	look := eval[map[string]string](tb, `(() => {
		const bg = s => { const e = document.querySelector(s); return e ? getComputedStyle(e).backgroundColor : 'none'; };
		const t = s => { const e = document.querySelector(s); return e ? e.textContent.trim() : ''; };
		return {add: bg('[data-testid=diff-line-add]'), del: bg('[data-testid=diff-line-del]'),
			ctx: bg('[data-testid=diff-line-ctx]'), addTag: document.querySelector('[data-testid=diff-line-add]').tagName,
			delTag: document.querySelector('[data-testid=diff-line-del]').tagName,
			addText: t('[data-testid=diff-line-add]'), delText: t('[data-testid=diff-line-del]')};
	})()`)
	if look["addTag"] != "INS" || look["delTag"] != "DEL" {
		t.Errorf("diff lines are <%s>/<%s>, want <INS>/<DEL>", look["addTag"], look["delTag"])
	}
	if look["add"] == look["ctx"] || look["del"] == look["ctx"] || look["add"] == look["del"] || transparent(look["add"]) || transparent(look["del"]) {
		t.Errorf("diff lines not highlighted: backgrounds added %s, removed %s, context %s", look["add"], look["del"], look["ctx"])
	}
	if !strings.HasPrefix(look["addText"], "+") || !strings.HasPrefix(look["delText"], "-") {
		t.Errorf("diff lines without markers: added %q, removed %q", look["addText"], look["delText"])
	}
	if tb.count(sel("diff-legend")) != 1 {
		t.Error("the diff has no legend")
	}
	tb.screenshot("diff")

	// The control: a version against itself has no changed lines.
	tb.open("/ui/agents/support/diff?a=2&b=2")
	tb.waitSel(sel("diff-empty"))
	if n := tb.count(sel("diff-line-add")) + tb.count(sel("diff-line-del")); n != 0 {
		t.Errorf("diff of version 2 against itself shows %d changed lines", n)
	}
}

func anyContains(list []string, s string) bool {
	for _, x := range list {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}

func transparent(color string) bool {
	return color == "" || color == "none" || color == "transparent" || color == "rgba(0, 0, 0, 0)"
}
