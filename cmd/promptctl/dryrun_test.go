package main

import (
	"strings"
	"testing"

	"github.com/promptd/promptd/api/client"
)

// TestApplyDryRun_withUndeclaredVariable_reportsTheServersProblem: the
// dry run asks promptd (?dry_run=true), so a config promptd would refuse
// is reported invalid with its code and field, exit 1, and nothing is
// written; the valid file beside it is planned.
func TestApplyDryRun_withUndeclaredVariable_reportsTheServersProblem(t *testing.T) {
	s := startPromptd(t)
	dir := t.TempDir()
	writeFile(t, dir, "billing.yaml", promptYAML("billing", "You bill."))
	writeFile(t, dir, "support.yaml", "agent: support\nconfig:\n  system: \"Hi {{who}}\"\n")

	r, items := s.applyJSON(t, "-f", dir, "--dry-run")
	if r.code != exitFailed || statuses(items) != "billing=create support=invalid" {
		t.Fatalf("dry run: %s\n%s", statuses(items), r)
	}
	if it := items[1]; it.Code != "undeclared_variable" || it.Field != "config.system" {
		t.Fatalf("support: code %q field %q, want undeclared_variable config.system\n%s", it.Code, it.Field, r)
	}
	r = s.ctl(t, "apply", "-f", dir, "--dry-run")
	for _, want := range []string{"invalid support:", "(422 undeclared_variable)", `variable "who" in field config.system`,
		"1 invalid or failed (dry run: 1 to create, nothing changed)"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("dry run table lacks %q:\n%s", want, r)
		}
	}
	if !strings.Contains(r.stderr, "dry run: promptd would not apply support") {
		t.Fatalf("dry run stderr:\n%s", r)
	}
	agents, err := s.admin.AllAgents(t.Context())
	if err != nil || len(agents) != 0 {
		t.Fatalf("a dry run wrote: %+v, %v", agents, err)
	}
	if l := readLockT(t, dir); len(l) != 0 {
		t.Fatalf("a dry run wrote the lock file: %+v", l)
	}

	// The control: a real apply writes the valid file and refuses the other
	// with the same problem.
	r, items = s.applyJSON(t, "-f", dir)
	if r.code != exitFailed || statuses(items) != "billing=created support=invalid" || items[1].Code != "undeclared_variable" {
		t.Fatalf("apply: %s\n%s", statuses(items), r)
	}
	if vs, err := s.admin.ListVersions(t.Context(), "billing", client.ListOptions{}); err != nil || len(vs.Items) != 1 {
		t.Fatalf("billing versions: %v", err)
	}
}

// TestApply_dryRun_printsTheDiffOfWhatWouldChange: a planned create over
// an existing version shows the unified diff from promptd's latest to the
// file, and with --rebase the diff to the merged config; nothing is
// published.
func TestApply_dryRun_printsTheDiffOfWhatWouldChange(t *testing.T) {
	s := startPromptd(t)
	dir := t.TempDir()
	writeFile(t, dir, "support.json", supportJSON("Within 30 days.", "Be brief.", "0.2"))
	if r := s.ctl(t, "apply", "-f", dir); r.code != exitOK {
		t.Fatalf("apply v1:\n%s", r)
	}
	stale := copyDir(t, dir)
	writeFile(t, dir, "support.json", supportJSON("Within 60 days.", "Be brief.", "0.2"))
	r := s.ctl(t, "apply", "-f", dir, "--dry-run")
	t.Logf("dry run:\n%s", r.stdout)
	for _, want := range []string{"--- support/v1 (promptd)", "+++ support.json (yours)", `-      "instructions": "Within 30 days.",`, `+      "instructions": "Within 60 days.",`} {
		if r.code != exitOK || !strings.Contains(r.stdout, want) {
			t.Fatalf("the dry run lacks %q:\n%s", want, r)
		}
	}
	if r := s.ctl(t, "apply", "-f", dir); r.code != exitOK {
		t.Fatalf("apply v2:\n%s", r)
	}
	writeFile(t, stale, "support.json", supportJSON("Within 30 days.", "Be warm.", "0.2"))
	r = s.ctl(t, "apply", "-f", stale, "--dry-run", "--rebase")
	t.Logf("dry run --rebase:\n%s", r.stdout)
	for _, want := range []string{"would merge your changes since version 1 over version 2 as version 3", "3 (planned merge)", "+++ support/v3 (merged, planned)", `+      "instructions": "Be warm."`} {
		if r.code != exitOK || !strings.Contains(r.stdout, want) {
			t.Fatalf("the rebase dry run lacks %q:\n%s", want, r)
		}
	}
	if vs, _ := s.admin.ListVersions(t.Context(), "support", client.ListOptions{}); vs.Items[0].Version != 2 {
		t.Fatalf("a dry run published version %d", vs.Items[0].Version)
	}
}
