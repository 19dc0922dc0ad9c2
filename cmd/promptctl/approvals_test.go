package main

import (
	"strings"
	"testing"

	"github.com/promptd/promptd/api/client"
	"github.com/promptd/promptd/internal/harness/testenv"
)

func TestApprovals_gatedApply_printsTheChangeRequestAndAnotherAdminApproves(t *testing.T) {
	if testing.Short() {
		t.Skip("starts promptd")
	}
	const leadSecret = "lead-secret-for-promptctl-tests"
	p := testenv.StartPromptd(t, map[string]string{"PROMPTD_DATA_DIR": t.TempDir(),
		"PROMPTD_TOKENS": "ops:admin:" + adminSecret + ",lead:admin:" + leadSecret})
	s := &testServer{p: p, admin: client.New(p.URL, adminSecret)}
	dir := t.TempDir()
	writeFile(t, dir, "support.yaml", promptYAML("support", "v1"))
	if r := s.ctl(t, "apply", "-f", dir, "--env", "prod"); r.code != exitOK {
		t.Fatalf("first apply: %s", r)
	}
	if r := s.ctl(t, "--output", "json", "agents"); r.code != exitOK {
		t.Fatalf("agents: %s", r)
	}
	if _, err := s.admin.SetProtection(t.Context(), "prod", client.Protection{Approvals: 1}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "support.yaml", promptYAML("support", "v2"))
	r := s.ctl(t, "apply", "-f", dir, "--env", "prod")
	if r.code != exitOK || !strings.Contains(r.stdout, "pending approval") {
		t.Fatalf("gated apply: %s", r)
	}
	id := r.stdout[strings.Index(r.stdout, "cr_") : strings.Index(r.stdout, "cr_")+23]
	if r := s.ctl(t, "approvals", "approve", id); r.code == exitOK {
		t.Fatalf("self-approval passed: %s", r)
	}
	if r := s.ctlAs(t, leadSecret, "approvals", "approve", id); r.code != exitOK || !strings.Contains(r.stdout, "applied") {
		t.Fatalf("approve: %s", r)
	}
	if r := s.ctl(t, "approvals", "list", "--state", "applied"); r.code != exitOK || !strings.Contains(r.stdout, id) {
		t.Fatalf("list: %s", r)
	}
}
