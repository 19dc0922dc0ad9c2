package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// waitFor bounds every wait for the page: generous, because the machine
// is shared and the console fetches its data after each navigation.
const waitFor = 15 * time.Second

// cspWatch runs in every document before the page's own scripts (from the
// DevTools protocol, so the page's CSP does not apply to it): it records
// each securitypolicyviolation the document reports.
const cspWatch = `(() => {
	window.__cspViolations = [];
	window.__cspPolicy = '';
	document.addEventListener('securitypolicyviolation', (e) => {
		window.__cspPolicy = e.originalPolicy;
		window.__cspViolations.push(e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline') +
			(e.sourceFile ? ' at ' + e.sourceFile + ':' + e.lineNumber : ''));
	});
})();`

// tab is one browser tab of a test, on the console of srv.
type tab struct {
	t   *testing.T
	ctx context.Context
	srv *server
	n   int // the test's nth tab, in its screenshots' names

	mu       sync.Mutex
	problems []string // uncaught exceptions and console errors, see consoleProblems
}

// tabs counts each test's tabs.
var (
	tabsMu sync.Mutex
	tabs   = map[*testing.T]int{}
)

// newTab opens a tab in a fresh browser context (no cookies, no storage
// shared with other tests), closed when the test ends.
func newTab(t *testing.T, srv *server) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browserContext(t), chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	return startTab(t, ctx, srv)
}

// sibling opens another tab in the same browser context as tb: it shares
// tb's cookies, as a second tab of one user does.
func (tb *tab) sibling(opts ...chromedp.ContextOption) *tab {
	tb.t.Helper()
	ctx, cancel := chromedp.NewContext(tb.ctx, opts...)
	tb.t.Cleanup(cancel)
	return startTab(tb.t, ctx, tb.srv)
}

func startTab(t *testing.T, ctx context.Context, srv *server) *tab {
	t.Helper()
	tabsMu.Lock()
	tabs[t]++
	tb := &tab{t: t, ctx: ctx, srv: srv, n: tabs[t]}
	tabsMu.Unlock()
	// The first Do opens the tab and binds the tab's life to the context it
	// is given, so it gets the tab's own context, not one with a timeout.
	opened := make(chan error, 1)
	go func() {
		opened <- chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument,
				page.AddScriptToEvaluateOnNewDocumentParams{Source: cspWatch})
			return err
		}))
	}()
	select {
	case err := <-opened:
		if err != nil {
			t.Fatalf("open a tab: %v", err)
		}
	case <-time.After(2 * waitFor):
		t.Fatalf("a new tab did not open within %v", 2*waitFor)
	}
	go tb.watchConsole(chromedp.Console(ctx))
	t.Cleanup(func() {
		if t.Failed() {
			tb.screenshot("at-failure")
		}
	})
	return tb
}

// do runs browser actions, bounded, and fails the test on error.
func (tb *tab) do(actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 2*waitFor)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.t.Fatalf("browser: %v", err)
	}
}

// eval evaluates a JavaScript expression in the page (awaiting a promise)
// and decodes its JSON value into T.
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 2*waitFor)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("evaluate %.200s: %v", expr, err)
	}
	return v
}

// open navigates to a console path (e.g. "/ui/releases") and waits until
// the page's h1 is there.
func (tb *tab) open(path string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 2*waitFor)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(tb.srv.URL+path)); err != nil {
		tb.t.Fatalf("navigate to %s: %v", path, err)
	}
	tb.waitPage()
}

// waitPage waits until the console has rendered a page: its title (the
// page's h1) or a page-level error.
func (tb *tab) waitPage() {
	tb.t.Helper()
	tb.wait("a page title or a page error", `!!document.querySelector('[data-testid=page-title], [data-testid=page-error]')`)
}

// wait polls a JavaScript condition until it is true. (chromedp.Poll
// builds its predicate with new Function, which the console's CSP
// forbids, so the suite polls from the DevTools protocol instead.)
func (tb *tab) wait(what, cond string) {
	tb.t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		// An error is a document going away under a navigation: try again.
		ctx, cancel := context.WithTimeout(tb.ctx, waitFor)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+cond+")"))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			tb.t.Fatalf("waited %v for %s (%s); page %s shows: %.600s", waitFor, what, cond,
				eval[string](tb, "location.pathname + location.search"), eval[string](tb, "document.body ? document.body.innerText : ''"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// settle waits until the page is at rest: its event stream connected (or
// given up), the refresh that follows the stream's opening done, and no
// list loading (a loading list is dimmed, which axe-core would rightly
// count against its contrast).
func (tb *tab) settle() {
	tb.t.Helper()
	tb.wait("the live indicator settled", `(e => !e || e.dataset.state !== 'connecting')(document.querySelector('[data-testid=live-indicator]'))`)
	time.Sleep(500 * time.Millisecond) // the refresh after the stream opens starts within 300 ms
	tb.wait("no list loading", `!document.querySelector('[aria-busy=true], [data-loaded=false]')`)
}

// sel is the CSS selector of a data-testid, optionally with attribute
// conditions: sel("agent-row", "data-agent", "support").
func sel(testid string, attrs ...string) string {
	s := fmt.Sprintf("[data-testid=%q]", testid)
	for i := 0; i+1 < len(attrs); i += 2 {
		s += fmt.Sprintf("[%s=%q]", attrs[i], attrs[i+1])
	}
	return s
}

// js quotes a Go string as a JavaScript string literal.
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// waitSel waits until an element matching the CSS selector is present.
func (tb *tab) waitSel(css string) {
	tb.t.Helper()
	tb.wait(css, "document.querySelector("+js(css)+")")
}

// text waits for the element and returns its visible text.
func (tb *tab) text(css string) string {
	tb.t.Helper()
	tb.waitSel(css)
	return strings.TrimSpace(eval[string](tb, "document.querySelector("+js(css)+").innerText"))
}

// attr waits for the element and returns one of its attributes.
func (tb *tab) attr(css, name string) string {
	tb.t.Helper()
	tb.waitSel(css)
	return eval[string](tb, "document.querySelector("+js(css)+").getAttribute("+js(name)+") || ''")
}

// count returns how many elements match the selector now.
func (tb *tab) count(css string) int {
	tb.t.Helper()
	return eval[int](tb, "document.querySelectorAll("+js(css)+").length")
}

// click waits until the element is visible and clicks it with the mouse.
func (tb *tab) click(css string) {
	tb.t.Helper()
	tb.waitSel(css)
	tb.do(chromedp.Click(chromedp.CSS(css), chromedp.NodeVisible))
}

// fill replaces the value of an input by typing, as a user does (a
// <select> gets the option of that value).
func (tb *tab) fill(css, value string) {
	tb.t.Helper()
	tb.waitSel(css)
	if eval[string](tb, "document.querySelector("+js(css)+").tagName") == "SELECT" {
		tb.setValue(css, value)
		return
	}
	tb.setValue(css, "")
	tb.do(chromedp.SendKeys(chromedp.CSS(css), value, chromedp.NodeVisible))
	if got := eval[string](tb, "document.querySelector("+js(css)+").value"); got != value {
		tb.t.Fatalf("typed %q into %s, it holds %q", value, css, got)
	}
}

// setValue sets a control's value and fires input and change, for
// controls that are not typed into (a range slider, a select).
func (tb *tab) setValue(css, value string) {
	tb.t.Helper()
	tb.waitSel(css)
	eval[bool](tb, `(() => { const el = document.querySelector(`+js(css)+`); el.value = `+js(value)+`;
		el.dispatchEvent(new Event('input', {bubbles: true})); el.dispatchEvent(new Event('change', {bubbles: true})); return true; })()`)
}

// visible counts the elements matching the selector that are rendered
// (not hidden, not display:none).
func (tb *tab) visible(css string) int {
	tb.t.Helper()
	return eval[int](tb, "[...document.querySelectorAll("+js(css)+")].filter(e => e.getClientRects().length > 0).length")
}

// path is the page's location path and query.
func (tb *tab) path() string {
	tb.t.Helper()
	return eval[string](tb, "location.pathname + location.search")
}

// cspViolations returns the CSP violations the current document reported.
func (tb *tab) cspViolations() []string {
	tb.t.Helper()
	return eval[[]string](tb, "window.__cspViolations || []")
}

// screenshot saves the whole page (beyond the laptop-sized viewport) as a
// PNG in the artifacts directory, logs its path and returns it.
func (tb *tab) screenshot(label string) string {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 2*waitFor)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err != nil {
		tb.t.Errorf("screenshot %s: %v", label, err)
		return ""
	}
	if tb.n > 1 {
		label = fmt.Sprintf("tab%d-%s", tb.n, label)
	}
	p := filepath.Join(artifactsDir(tb.t), artifactName(tb.t, label))
	if err := os.WriteFile(p, png, 0o644); err != nil {
		tb.t.Errorf("screenshot %s: %v", label, err)
		return ""
	}
	tb.t.Logf("screenshot: %s", p)
	return p
}

// login signs in through the login page and waits for the agents page.
func (tb *tab) login(token string) {
	tb.t.Helper()
	tb.open("/ui/login")
	tb.fill(sel("login-token"), token)
	tb.click(sel("login-submit"))
	tb.wait("the agents page after login", `location.pathname === '/ui/' && document.querySelector('[data-testid=agents]')`)
}

// atoi parses an attribute that must hold a number.
func atoi(t *testing.T, what, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%s: %q is not a number", what, s)
	}
	return n
}

// watchConsole records the page's uncaught exceptions and console errors.
// A failed request is the browser's own log entry, not a script error: the
// console asks /ui/session before login and gets 401 by design, so those
// are left out.
func (tb *tab) watchConsole(messages iter.Seq2[chromedp.ConsoleMessage, error]) {
	for m, err := range messages {
		if err != nil {
			return
		}
		if m.Type != chromedp.ConsoleError && m.Type != chromedp.ConsoleException {
			continue
		}
		if strings.HasPrefix(m.Text, "Failed to load resource") {
			continue
		}
		tb.mu.Lock()
		tb.problems = append(tb.problems, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line+1))
		tb.mu.Unlock()
	}
}

// consoleProblems returns the exceptions and console errors seen since the
// last call.
func (tb *tab) consoleProblems() []string {
	time.Sleep(100 * time.Millisecond) // messages arrive asynchronously
	tb.mu.Lock()
	defer tb.mu.Unlock()
	p := tb.problems
	tb.problems = nil
	return p
}
