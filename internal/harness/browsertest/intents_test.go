package browsertest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// registerIntent registers an intent with the runtime token and returns
// its id and fence.
func (s *server) registerIntent(body map[string]any) (string, int) {
	s.t.Helper()
	m := s.mustAs(runtimeToken, 201, "POST", "/v1/intents", body)
	return m["id"].(string), int(m["fence"].(float64))
}

// The intents page lists the live intents registered through the API
// (holder, mode, scope in words, description, fence, expiry), filters
// them by the scope they overlap, and shows one registered after it
// loaded (the change feed's intent.registered).
func TestIntents_page_listsTheLiveIntents_filtersThem_andFollowsTheFeed(t *testing.T) {
	srv := startServer(t)
	eu, euFence := srv.registerIntent(map[string]any{"holder": "importer-a", "description": "EU rows", "ttl_ms": 600000,
		"scope": map[string]any{"records": []map[string]any{{"board": "crm", "prefixes": []string{"eu-"}}}}})
	reader, _ := srv.registerIntent(map[string]any{"holder": "reader", "mode": "advisory",
		"scope": map[string]any{"agents": []string{"support"}, "envs": []string{"prod"}}})

	tb := newTab(t, srv)
	tb.login(adminToken)
	tb.click(sel("nav-intents"))
	tb.waitSel(sel("intents", "data-loaded", "true") + " " + sel("intent-row"))
	if cur := tb.attr(sel("nav-intents"), "aria-current"); cur != "page" {
		t.Errorf("the Intents nav link has aria-current %q, want page", cur)
	}
	if got := tb.rows("intent-row", "intent-id"); fmt.Sprint(got) != fmt.Sprint(sorted(eu, reader)) {
		t.Fatalf("the intents page lists %v, want %v", got, sorted(eu, reader))
	}
	row := tb.text(sel("intent-row", "data-intent-id", eu))
	for _, want := range []string{"importer-a", "exclusive", "Board crm: ids starting eu-", "EU rows", fmt.Sprint(euFence), "in ", "rt"} {
		if !strings.Contains(row, want) {
			t.Errorf("the row of %s reads %q: no %q in it", eu, row, want)
		}
	}
	if row := tb.text(sel("intent-row", "data-intent-id", reader)); !strings.Contains(row, "Agent support in prod") || !strings.Contains(row, "advisory") {
		t.Errorf("the advisory intent's row reads %q", row)
	}

	// The feed: an intent registered while the page is shown appears.
	tb.wait("the stream open", `document.querySelector('[data-testid=live-indicator][data-state=live]')`)
	other, _ := srv.registerIntent(map[string]any{"holder": "sweeper", "scope": map[string]any{"boards": []string{"archive"}}})
	tb.waitSel(sel("intent-row", "data-intent-id", other))
	if row := tb.text(sel("intent-row", "data-intent-id", other)); !strings.Contains(row, "Board archive: every record") {
		t.Errorf("the whole board's intent reads %q", row)
	}

	// The filter is the API's overlap query: a record the first covers.
	tb.fill(sel("intents-record"), "crm/eu-9")
	tb.click(sel("intents-submit"))
	tb.wait("the filtered list", `location.search.includes('record=crm%2Feu-9') && document.querySelector('[data-testid=intents][data-loaded=true]')`)
	if got := tb.rows("intent-row", "intent-id"); fmt.Sprint(got) != fmt.Sprint([]string{eu}) {
		t.Errorf("record=crm/eu-9 lists %v, want [%s]", got, eu)
	}
	tb.open("/ui/intents?board=nowhere")
	tb.waitSel(sel("intents-empty"))
	tb.screenshot("intents-filtered-empty")
}

// The intent's page shows its fence, and releases it with that fence
// after a confirmation, all from the keyboard: cancelling changes nothing;
// confirming ends the intent, so a write under it is stale_fence and the
// list no longer shows it.
func TestIntent_release_fromTheKeyboard_afterAConfirmation_endsTheIntent(t *testing.T) {
	srv := startServer(t)
	id, fence := srv.registerIntent(map[string]any{"holder": "importer-a", "description": "EU rows",
		"scope": map[string]any{"records": []map[string]any{{"board": "crm", "prefixes": []string{"eu-"}}}}})
	srv.mustAs(runtimeToken, 201, "POST", "/v1/boards/crm/records", map[string]any{"id": "eu-1", "payload": 1})

	tb := newTab(t, srv)
	tb.login(runtimeToken)
	tb.open("/ui/intents")
	tb.click(sel("intent-row", "data-intent-id", id) + " " + sel("intent-link"))
	tb.wait("the intent's page", `location.pathname === `+js("/ui/intents/"+id))
	tb.waitSel(sel("intent-summary", "data-state", "active"))
	if got := tb.text(sel("intent-fence")); got != fmt.Sprint(fence) {
		t.Fatalf("the page shows fence %q, want %d", got, fence)
	}
	if scope := tb.text(sel("intent-summary") + " " + sel("intent-scope")); scope != "Board crm: ids starting eu-" {
		t.Errorf("scope reads %q", scope)
	}

	dialogOpen := `(d => d && d.open)(document.querySelector('[data-testid=confirm-dialog]'))`
	focused := func() string {
		return eval[string](tb, `(document.activeElement && document.activeElement.dataset.testid) || ''`)
	}
	press := func(key string) { tb.do(chromedp.KeyEvent(key)) }
	tb.do(chromedp.Focus(chromedp.CSS(sel("intent-release")), chromedp.NodeVisible))
	press("\r")
	tb.wait("the confirm dialog", dialogOpen)
	if f := focused(); f != "confirm-cancel" {
		t.Errorf("the dialog opened with focus on %q, want confirm-cancel", f)
	}
	if msg := tb.text(sel("confirm-dialog")); !strings.Contains(msg, fmt.Sprintf("fence %d", fence)) || !strings.Contains(msg, "importer-a") {
		t.Errorf("the confirmation reads %q: it should name the fence and the holder", msg)
	}
	press("\r") // cancel
	tb.wait("the dialog closed", "!"+dialogOpen)
	if st := srv.mustAs(runtimeToken, 200, "GET", "/v1/intents/"+id, nil)["state"]; st != "active" {
		t.Fatalf("after cancel the intent is %v", st)
	}

	tb.do(chromedp.Focus(chromedp.CSS(sel("intent-release")), chromedp.NodeVisible))
	press("\r")
	tb.wait("the confirm dialog", dialogOpen)
	press("\t")
	if f := focused(); f != "confirm-ok" {
		t.Fatalf("Tab in the dialog went to %q, want confirm-ok", f)
	}
	press("\r")
	tb.waitSel(sel("intent-summary", "data-state", "released"))
	tb.waitSel(sel("intent-released"))
	if f := focused(); f != "intent-released" {
		t.Errorf("after the release focus is on %q, want the notice intent-released", f)
	}
	if tb.visible(sel("intent-release")) != 0 {
		t.Error("a released intent still offers Release")
	}
	tb.screenshot("intent-released")

	if st := srv.mustAs(runtimeToken, 200, "GET", "/v1/intents/"+id, nil)["state"]; st != "released" {
		t.Fatalf("the API reads the intent as %v, want released", st)
	}
	status, body := srv.call("PATCH", "/v1/boards/crm/records/eu-1", runtimeToken,
		map[string]any{"expected_revision": 1, "payload": 2, "intent": map[string]any{"id": id, "fence": fence}})
	if status != 409 || !strings.Contains(string(body), "stale_fence") {
		t.Errorf("a write under the released intent: %d %s, want 409 stale_fence", status, body)
	}
	tb.open("/ui/intents")
	tb.waitSel(sel("intents", "data-loaded", "true"))
	if n := tb.count(sel("intent-row", "data-intent-id", id)); n != 0 {
		t.Error("the list still shows the released intent")
	}
}

// A scoped token may list intents only by a scope within its own: the
// page asks for a filter instead of an error, and lists its board's
// intents once given one.
func TestIntents_scopedToken_isAskedForAFilter_andSeesItsBoardsIntents(t *testing.T) {
	srv := startServer(t)
	crm, _ := srv.registerIntent(map[string]any{"holder": "importer", "scope": map[string]any{"boards": []string{"crm"}}})
	srv.registerIntent(map[string]any{"holder": "elsewhere", "scope": map[string]any{"boards": []string{"hr"}}})
	scoped := srv.must(201, "POST", "/v1/tokens", map[string]any{"name": "crm-rt", "role": "runtime",
		"scopes": map[string]any{"boards": []string{"crm"}}})["secret"].(string)
	tb := newTab(t, srv)
	tb.login(scoped)
	tb.open("/ui/intents")
	tb.waitSel(sel("intents-empty"))
	if n := tb.count(sel("page-error")); n != 0 {
		t.Errorf("the scoped token's unfiltered page shows an error: %q", tb.text(sel("page-error")))
	}
	tb.open("/ui/intents?board=crm")
	tb.waitSel(sel("intents", "data-loaded", "true") + " " + sel("intent-row"))
	if got := tb.rows("intent-row", "intent-id"); fmt.Sprint(got) != fmt.Sprint([]string{crm}) {
		t.Errorf("board=crm lists %v, want [%s]", got, crm)
	}
}

func sorted(ids ...string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}
