package browsertest

import (
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

func itoa(n int) string { return strconv.Itoa(n) }

// checkAxe fails the test on an axe violation of serious or critical
// impact, a CSP violation or a console error on the current page.
func (tb *tab) checkAxe(page string) {
	tb.t.Helper()
	tb.settle()
	severe, all := tb.axeRun()
	for _, v := range severe {
		tb.t.Errorf("%s: axe: %s", page, v)
	}
	for _, v := range tb.cspViolations() {
		tb.t.Errorf("%s: CSP violation: %s", page, v)
	}
	for _, p := range tb.consoleProblems() {
		tb.t.Errorf("%s: console: %s", page, p)
	}
	tb.t.Logf("%s: axe: %d serious or critical, %d violations in all", page, len(severe), all)
}

// TestAuthoring_draftTypoCaughtPreviewPublishPoint_andAStaleAuthorMerges:
// an author starts a draft from v1 in the console, declares a variable,
// types the system prompt with a typo (an undeclared placeholder shown as
// a problem next to the field, publish disabled), fixes it, previews with
// a sample value in both formats, reviews the diff, publishes v2 and
// points staging (then a protected env, which answers with a change
// request). A second author (another principal) drafting from v1 sees the
// conflict and publishes through the three-way merge. The preview and the
// publish are driven from the keyboard too. axe finds nothing serious or
// critical on the editor.
func TestAuthoring_draftTypoCaughtPreviewPublishPoint_andAStaleAuthorMerges(t *testing.T) {
	srv := startServer(t)
	srv.publish("writer", 0, "You are a helper.")
	tb := newTab(t, srv)
	tb.login(adminToken)

	tb.open("/ui/agents/writer")
	tb.click(sel("draft-new"))
	tb.wait("the draft editor", `location.pathname.startsWith('/ui/agents/writer/drafts/drf_') && document.querySelector('[data-testid=draft-problem-count][data-count="0"]')`)
	draftPath := tb.path()

	// Declare {{name}}, required; then the typo.
	tb.click(sel("variables-add"))
	tb.fill(sel("var-name"), "name")
	tb.click(sel("var-required"))
	tb.fill(sel("var-description"), "Who the helper greets")
	tb.fill(sel("draft-system"), "Hello {{nmae}}, you are a helper.")
	typo := `[data-testid=draft-problem][data-code=undeclared_variable][data-variable=nmae]`
	tb.wait("the undeclared placeholder as a problem", `document.querySelector('`+typo+`') && document.querySelector('[data-testid=draft-save-state]').dataset.state === 'saved'`)
	if got := tb.attr(sel("draft-system"), "aria-invalid"); got != "true" {
		t.Errorf("draft-system aria-invalid = %q, want true", got)
	}
	described := tb.attr(sel("draft-system"), "aria-describedby")
	boxID := tb.attr(sel("problems-system"), "id")
	if !strings.Contains(described, boxID) || tb.count(sel("problems-system")+" "+typo) != 1 {
		t.Errorf("the problem is not the system field's: aria-describedby %q, its box %q", described, boxID)
	}
	if !eval[bool](tb, `document.querySelector('[data-testid=publish-submit]').disabled`) {
		t.Error("publish is enabled with a problem shown")
	}
	tb.screenshot("typo")
	tb.checkAxe("draft editor with a problem")

	tb.fill(sel("draft-system"), "Hello {{name}}, you are a helper.")
	tb.wait("no problem left", `document.querySelector('[data-testid=draft-problem-count][data-count="0"]') && document.querySelector('[data-testid=draft-save-state]').dataset.state === 'saved'`)
	if got := tb.attr(sel("draft-system"), "aria-invalid"); got == "true" {
		t.Error("draft-system still aria-invalid after the fix")
	}
	saved := srv.must(200, "GET", "/v1/agents/writer/drafts/"+draftPath[strings.LastIndex(draftPath, "/")+1:], nil)
	if cfg := saved["config"].(map[string]any); cfg["system"] != "Hello {{name}}, you are a helper." || cfg["variables"] == nil {
		t.Fatalf("autosaved config = %v", cfg)
	}

	// Two tabs on one draft: the second saves first, the first's autosave
	// is a conflict it says, and a reload continues from the saved draft.
	next := atoi(t, "draft-revision", tb.text(sel("draft-revision"))) + 1
	want := js(itoa(next))
	other := tb.sibling()
	other.open(draftPath)
	other.wait("the draft in a second tab", `document.querySelector('[data-testid=draft-problem-count][data-count="0"]')`)
	other.fill(sel("draft-model"), `{"name": "gpt-4o", "temperature": 0.3}`)
	other.wait("the second tab saved", `document.querySelector('[data-testid=draft-save-state]').dataset.state === 'saved' && document.querySelector('[data-testid=draft-revision]').textContent === `+want)
	tb.fill(sel("var-description"), "Who the helper greets, by name")
	tb.wait("the conflict", `document.querySelector('[data-testid=draft-save-state]').dataset.state === 'conflict' && !document.querySelector('[data-testid=draft-conflict]').hidden`)
	if got := tb.text(sel("draft-conflict")); !strings.Contains(got, "revision "+itoa(next)) {
		t.Errorf("draft-conflict says %q, want the current revision %d", got, next)
	}
	tb.click(sel("draft-reload"))
	tb.wait("the saved draft reloaded", `document.querySelector('[data-testid=draft-revision]') && document.querySelector('[data-testid=draft-revision]').textContent === `+want+` && document.querySelector('[data-testid=draft-conflict]').hidden`)
	if model := eval[string](tb, `document.querySelector('[data-testid=draft-model]').value`); !strings.Contains(model, "0.3") {
		t.Errorf("after the reload the model is %q, want the other tab's", model)
	}

	// Preview with a sample value: plain messages and the OpenAI body.
	// From the keyboard: the sample value, Tab to "Preview", Enter.
	tb.fill(sel("preview-var", "data-var", "name"), "Ada")
	tb.do(chromedp.KeyEvent("\t"))
	if f := eval[string](tb, `document.activeElement ? document.activeElement.dataset.testid || '' : ''`); f != "preview-run" {
		t.Fatalf("Tab from the sample value focuses %q, want preview-run", f)
	}
	tb.do(chromedp.KeyEvent("\r"))
	tb.wait("the preview", `document.querySelector('[data-testid=preview-plain] [data-testid=preview-message]')`)
	if got := tb.text(sel("preview-plain") + " " + sel("preview-message", "data-role", "system")); !strings.Contains(got, "Hello Ada, you are a helper.") {
		t.Errorf("previewed system message: %q", got)
	}
	if got := tb.text(sel("preview-openai")); !strings.Contains(got, `"model": "gpt-4o"`) || !strings.Contains(got, "Hello Ada") {
		t.Errorf("previewed OpenAI body: %q", got)
	}
	// The token estimate, from the vendored o200k tokenizer: the count
	// node gives for the same text with the same package is 8.
	tb.wait("the token estimate", `document.querySelector('[data-testid=preview-message][data-role=system] [data-testid=preview-tokens][data-tokens]')`)
	if got := tb.text(sel("preview-message", "data-role", "system") + " " + sel("preview-tokens")); got != "8 tokens, estimate (o200k)" {
		t.Errorf("token estimate of the system message: %q, want 8 tokens, estimate (o200k)", got)
	}
	// A wrong type is assemble's 422, shown in the panel.
	tb.fill(sel("preview-var", "data-var", "name"), "")
	tb.click(sel("preview-run"))
	tb.wait("the missing variable", `document.querySelector('[data-testid=preview-error][data-code=missing_variable]')`)
	tb.fill(sel("preview-var", "data-var", "name"), "Ada")
	tb.click(sel("preview-run"))
	tb.wait("the preview again", `document.querySelector('[data-testid=preview-plain]')`)

	// The diff against the base.
	tb.click(sel("draft-diff-show"))
	tb.wait("the draft's diff", `document.querySelector('[data-testid=draft-diff] [data-testid=diff-view]')`)
	add := eval[[]string](tb, `[...document.querySelectorAll('[data-testid=draft-diff] [data-testid=diff-line-add]')].map(e => e.textContent)`)
	del := eval[[]string](tb, `[...document.querySelectorAll('[data-testid=draft-diff] [data-testid=diff-line-del]')].map(e => e.textContent)`)
	if !anyContains(add, "Hello {{name}}") || !anyContains(del, "You are a helper.") {
		t.Errorf("draft diff: added %q, removed %q", add, del)
	}
	tb.screenshot("editor")
	tb.checkAxe("draft editor with preview and diff")

	// Publish, point staging.
	tb.fill(sel("publish-message"), "greet by name")
	tb.click(sel("publish-submit"))
	tb.wait("published", `document.querySelector('[data-testid=published][data-version="2"]')`)
	tb.click(sel("point-submit"))
	tb.wait("staging pointed", `document.querySelector('[data-testid=point-done][data-env=staging][data-version="2"]')`)
	if v, _ := srv.pointer("writer", "staging"); v != 2 {
		t.Errorf("staging serves v%d, want v2", v)
	}
	v2 := srv.must(200, "GET", "/v1/agents/writer/versions/2", nil)
	if v2["message"] != "greet by name" || v2["created_by"] != "ops" {
		t.Errorf("v2 = %v", v2)
	}
	srv.must(404, "GET", "/v1/agents/writer/drafts/"+draftPath[strings.LastIndex(draftPath, "/")+1:], nil)
	// A protected env answers with a change request, shown and linked.
	srv.must(200, "PUT", "/v1/protections/prod", map[string]any{"approvals": 1})
	tb.fill(sel("point-env"), "prod")
	tb.click(sel("point-submit"))
	tb.waitSel(sel("change-request-notice") + " " + sel("change-request-link"))
	tb.checkAxe("published")

	// The second author, from v1 (now stale), changes memory.
	tb2 := newTab(t, srv)
	tb2.login(approverToken)
	tb2.open("/ui/agents/writer?version=1")
	tb2.wait("v1 shown", `document.querySelector('[data-testid=config-view][data-version="1"] [data-testid=draft-new]')`)
	tb2.click(sel("draft-new"))
	tb2.wait("the second editor", `location.pathname.startsWith('/ui/agents/writer/drafts/') && document.querySelector('[data-testid=draft-problem-count]')`)
	tb2.fill(sel("draft-memory"), "Keep answers short.")
	tb2.wait("saved", `document.querySelector('[data-testid=draft-save-state]').dataset.state === 'saved' && document.querySelector('[data-testid=draft-revision]').textContent !== '1'`)
	if n := len(srv.mustAs(approverToken, 200, "GET", "/v1/agents/writer/drafts", nil)["items"].([]any)); n != 1 {
		t.Errorf("the second author lists %d drafts, want 1 (their own)", n)
	}
	tb2.fill(sel("publish-message"), "memory")
	tb2.do(chromedp.KeyEvent("\r")) // Enter in the message submits the publish form
	tb2.wait("the conflict", `document.querySelector('[data-testid=publish-conflict][data-latest="2"] [data-testid=publish-merge]')`)
	tb2.screenshot("conflict")
	tb2.checkAxe("stale publish")
	tb2.do(chromedp.Focus(chromedp.CSS(sel("publish-merge")), chromedp.NodeVisible), chromedp.KeyEvent("\r"))
	tb2.wait("merged", `document.querySelector('[data-testid=published][data-version="3"]')`)
	v3 := srv.must(200, "GET", "/v1/agents/writer/versions/3", nil)
	cfg := v3["config"].(map[string]any)
	if cfg["system"] != "Hello {{name}}, you are a helper." || len(cfg["memory"].([]any)) != 1 || v3["created_by"] != "reviewer" {
		t.Errorf("merged v3 = %v", v3)
	}
}
