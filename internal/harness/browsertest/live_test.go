package browsertest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// A user who opens console pages by address (bookmarks, links pasted from
// chat, the address bar) loads the whole document each time. Chromium keeps
// the pages left in its back/forward cache, and with them their open event
// streams: unless the console closes its stream when a page is hidden, the
// sixth page exhausts the browser's six connections per host and the next
// one never loads.
func TestLiveUpdates_manyFullPageLoadsInOneTab_eachLoadsAndGoesLive(t *testing.T) {
	srv := startServer(t)
	srv.publish("support", 0, "support v1")
	tb := newTab(t, srv)
	tb.login(adminToken)
	pages := []string{"/ui/", "/ui/agents/support", "/ui/sessions", "/ui/tokens", "/ui/change-requests", "/ui/webhooks"}
	for i := 0; i < 12; i++ {
		p := pages[i%len(pages)]
		tb.open(p)
		tb.wait("the live indicator on "+p+" (load "+strconv.Itoa(i+1)+")", `document.querySelector('[data-testid=live-indicator][data-state=live]')`)
	}
	// Back to a page from the cache: it is live again, not stuck on its
	// closed stream.
	before := tb.path()
	eval[bool](tb, "history.back(), true")
	tb.wait("the page before", "location.pathname + location.search !== "+js(before))
	tb.waitPage()
	tb.wait("the live indicator after going back", `document.querySelector('[data-testid=live-indicator][data-state=live]')`)
}

// A page reads its data, then opens its event stream, which carries only
// what happens after it opened: a change in between must still reach the
// page, or it shows stale data until the user reloads.
func TestLiveUpdates_aChangeBetweenThePageLoadAndItsStream_isShown(t *testing.T) {
	srv := startServer(t)
	srv.publish("support", 0, "support v1")
	tb := newTab(t, srv)
	tb.login(adminToken)

	hold := tb.holdEvents()
	tb.open("/ui/agents/support")
	tb.waitSel(sel("version-row", "data-version", "1"))
	hold.waitHeld(t)
	srv.publish("support", 1, "support v2")
	time.Sleep(time.Second) // the event is in the feed (stamped within 100 ms) before the stream opens
	hold.release()
	tb.wait("the stream open", `document.querySelector('[data-testid=live-indicator][data-state=live]')`)
	tb.wait("version 2, published before the stream opened", `document.querySelector('[data-testid=version-row][data-version="2"]')`)
}

// Each console tab holds an event stream, and a browser opens at most six
// connections to one server over HTTP/1.1: tabs in the background must
// let theirs go, or the seventh console tab of a window never loads.
func TestLiveUpdates_manyTabsInOneWindow_eachLoads(t *testing.T) {
	srv := startServer(t)
	srv.publish("support", 0, "support v1")
	first := newTab(t, srv)
	first.login(adminToken)
	first.wait("the first tab live", `document.querySelector('[data-testid=live-indicator][data-state=live]')`)
	var tabs []*tab
	for i := 2; i <= 8; i++ {
		tb := first.sibling(chromedp.WithNewWindow(false)) // a new tab of the same window: the others go to the background
		tb.open("/ui/")
		tb.wait("tab "+strconv.Itoa(i)+" live", `document.querySelector('[data-testid=live-indicator][data-state=live]')`)
		if hidden := eval[bool](first, "document.hidden"); !hidden {
			t.Fatalf("the first tab is not in the background after opening tab %d: the test cannot show anything", i)
		}
		tabs = append(tabs, tb)
		t.Logf("tab %d loaded and live; the first tab is in the background", i)
	}
	// A background tab is brought back: it is live again, and up to date.
	srv.publish("support", 1, "support v2")
	tb := tabs[0]
	tb.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.BringToFront, cdp.Empty{})
		return err
	}))
	tb.wait("the tab brought back live", `document.querySelector('[data-testid=live-indicator][data-state=live]')`)
	tb.wait("the tab brought back shows the new version", `(r => r && r.cells[1].innerText.trim() === '2')(document.querySelector('[data-testid=agent-row][data-agent=support]'))`)
}
