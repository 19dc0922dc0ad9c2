package browsertest

import (
	"strings"
	"testing"
)

// A token created in the console shows its secret once; the secret works
// (it logs in), and the tokens page never shows it again.
func TestTokens_createdInTheBrowser_showsTheSecretOnce(t *testing.T) {
	srv := startServer(t)
	tb := newTab(t, srv)
	tb.login(adminToken)
	tb.open("/ui/tokens")
	tb.fill(sel("token-name"), "ci-reader")
	tb.fill(sel("token-role"), "runtime")
	tb.click(sel("token-submit"))
	secret := tb.text(sel("secret-once") + " " + sel("secret-value"))
	if !strings.HasPrefix(secret, "pd_") {
		t.Fatalf("secret-value %q, want a pd_ secret", secret)
	}
	tb.waitSel(sel("token-row", "data-token-name", "ci-reader"))

	tb.open("/ui/tokens")
	tb.waitSel(sel("token-row", "data-token-name", "ci-reader"))
	if html := eval[string](tb, "document.documentElement.outerHTML"); strings.Contains(html, secret) {
		t.Error("the tokens page shows the secret again after a reload")
	}

	// The secret is the token: it logs in, as a runtime token.
	other := newTab(t, srv)
	other.login(secret)
	if role := other.attr(sel("session-actor"), "data-role"); role != "runtime" {
		t.Errorf("logged in with the new token: role %q, want runtime", role)
	}
}
