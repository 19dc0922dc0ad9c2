package browsertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// cookies returns the browser's cookies for the server's URL.
func (tb *tab) cookies() []*network.Cookie {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, waitFor)
	defer cancel()
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{tb.srv.URL + "/ui/"}})
	if err != nil {
		tb.t.Fatalf("Network.getCookies: %v", err)
	}
	return res.Cookies
}

// sessionCookie returns the console's session cookie, or nil.
func (tb *tab) sessionCookie() *network.Cookie {
	tb.t.Helper()
	for _, c := range tb.cookies() {
		if c.Name == "promptd_session" {
			return c
		}
	}
	return nil
}

// navigate loads a console URL and returns the main document's response,
// as the browser received it.
func (tb *tab) navigate(path string) *network.Response {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 2*waitFor)
	defer cancel()
	responses := chromedp.Events(ctx, network.ResponseReceived)
	if err := chromedp.Do(ctx, chromedp.Navigate(tb.srv.URL+path)); err != nil {
		tb.t.Fatalf("navigate %s: %v", path, err)
	}
	for ev, err := range responses {
		if err != nil {
			tb.t.Fatalf("navigate %s: no document response: %v", path, err)
		}
		if ev.Type == network.ResourceTypeDocument && ev.Response.URL == tb.srv.URL+path {
			return ev.Response
		}
	}
	panic("unreachable")
}

// eventHold holds the tab's /v1/events requests (the live-update stream)
// until released, to open a gap between a page's load and its stream.
type eventHold struct {
	held     chan fetch.RequestID
	released chan struct{}
	once     sync.Once
}

// holdEvents starts holding; release lets the held requests (and every
// later one) through.
func (tb *tab) holdEvents() *eventHold {
	tb.t.Helper()
	h := &eventHold{held: make(chan fetch.RequestID, 64), released: make(chan struct{})}
	paused := chromedp.Events(tb.ctx, fetch.RequestPaused)
	if _, err := chromedp.Call(tb.ctx, fetch.Enable, fetch.EnableParams{
		Patterns: []*fetch.RequestPattern{{URLPattern: tb.srv.URL + "/v1/events*"}},
	}); err != nil {
		tb.t.Fatalf("Fetch.enable: %v", err)
	}
	ctx := tb.ctx
	go func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			select {
			case h.held <- ev.RequestID:
			default:
			}
			go func(id fetch.RequestID) {
				select {
				case <-h.released:
				case <-ctx.Done():
					return
				}
				_, _ = chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: id})
			}(ev.RequestID)
		}
	}()
	tb.t.Cleanup(h.release)
	return h
}

// waitHeld waits until a stream request is being held.
func (h *eventHold) waitHeld(t *testing.T) {
	t.Helper()
	select {
	case <-h.held:
	case <-time.After(waitFor):
		t.Fatal("the page opened no event stream to hold")
	}
}

func (h *eventHold) release() { h.once.Do(func() { close(h.released) }) }
