package browsertest

import (
	"fmt"
	"testing"
)

// TestTokensPage_listsTheBootstrapTokens_withoutSecrets: the page an admin
// reads to see which tokens can act names the bootstrap set (the suite's
// PROMPTD_TOKENS: two admins and a runtime token), never a secret.
func TestTokensPage_listsTheBootstrapTokens_withoutSecrets(t *testing.T) {
	srv := startServer(t)
	tb := newTab(t, srv)
	tb.login(adminToken)
	tb.open("/ui/tokens")
	tb.waitSel(sel("bootstrap-token-row"))
	names := eval[[]string](tb, `[...document.querySelectorAll('[data-testid=bootstrap-token-row]')].map(e => e.dataset.tokenName + ':' + e.children[1].textContent).sort()`)
	api := srv.must(200, "GET", "/v1/tokens", nil)["bootstrap"].([]any)
	if len(names) != len(api) || len(names) < 3 {
		t.Fatalf("the page lists bootstrap tokens %v, the API %v", names, api)
	}
	for _, b := range api {
		m := b.(map[string]any)
		want := fmt.Sprint(m["name"], ":", m["role"])
		found := false
		for _, n := range names {
			found = found || n == want
		}
		if !found {
			t.Errorf("the page lists %v, without %s", names, want)
		}
	}
	body := eval[string](tb, `document.body.innerText`)
	for _, secret := range []string{adminToken, approverToken, runtimeToken} {
		if contains(body, secret) {
			t.Errorf("the tokens page shows a bootstrap secret")
		}
	}
}
