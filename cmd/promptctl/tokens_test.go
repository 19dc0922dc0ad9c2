package main

import (
	"strings"
	"testing"
)

func TestTokens_createListRevoke_fromTheCommandLine(t *testing.T) {
	s := startPromptd(t)
	r := s.ctl(t, "tokens", "create", "team-a-runtime", "--role", "runtime", "--agents", "team-a-*", "--envs", "prod", "--expires", "24h")
	if r.code != exitOK || !strings.Contains(r.stdout, "pd_") {
		t.Fatalf("create: %s", r)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	secret := lines[len(lines)-1]
	if r := s.ctlAs(t, secret, "agents"); r.code != exitOK {
		t.Fatalf("the new token does not work: %s", r)
	}
	r = s.ctl(t, "tokens", "list")
	if r.code != exitOK || !strings.Contains(r.stdout, "team-a-runtime") || !strings.Contains(r.stdout, "agents=team-a-*") || strings.Contains(r.stdout, secret) {
		t.Fatalf("list: %s", r)
	}
	if r := s.ctl(t, "tokens", "revoke", "team-a-runtime"); r.code != exitOK {
		t.Fatalf("revoke: %s", r)
	}
	if r := s.ctlAs(t, secret, "agents"); r.code == exitOK {
		t.Fatalf("a revoked token still works: %s", r)
	}
	if r := s.ctl(t, "tokens", "revoke", "ops"); r.code != exitConflict && r.code != exitFailed {
		t.Fatalf("revoking a bootstrap token: %s", r)
	}
	if r := s.ctl(t, "tokens", "create", "x"); r.code != exitUsage {
		t.Fatalf("create without --role: %s", r)
	}
}

// TestTokensList_showsTheBootstrapTokens: the tokens of PROMPTD_TOKENS can
// act as much as any managed one; the list an admin reads names them (never
// their secrets), first, and every page of managed tokens after them.
func TestTokensList_showsTheBootstrapTokens(t *testing.T) {
	s := startPromptd(t)
	r := s.ctl(t, "tokens", "list")
	if r.code != exitOK {
		t.Fatalf("list: %s", r)
	}
	for _, want := range []string{"ops", "rt", "bootstrap (PROMPTD_TOKENS)", "admin", "runtime"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("tokens list shows no %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, adminSecret) || strings.Contains(r.stdout, runtimeSecret) {
		t.Errorf("tokens list shows a bootstrap secret:\n%s", r.stdout)
	}
	r = s.ctl(t, "tokens", "list", "--output", "json")
	if r.code != exitOK || !strings.Contains(r.stdout, `"bootstrap"`) || !strings.Contains(r.stdout, `"source": "PROMPTD_TOKENS"`) {
		t.Errorf("tokens list --output json: %s", r)
	}
}
