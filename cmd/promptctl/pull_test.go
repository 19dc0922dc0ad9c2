package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promptd/promptd/api/client"
)

// TestPull_thenApply_isANoOp: pull writes promptd's latest version of
// every agent (more than one page of agents) in the format apply reads,
// plus the lock file, so the apply right after creates nothing; configs
// YAML could misread (multi-line text, 0.20, "true", "007", empty lists)
// come back with the same content hash.
func TestPull_thenApply_isANoOp(t *testing.T) {
	s := startPromptd(t)
	ctx := t.Context()
	const n = 520 // AllAgents pages by 500
	batch := make([]client.ImportItem, n)
	for i := range batch {
		batch[i] = client.ImportItem{Agent: fmt.Sprintf("bulk-%03d", i), Config: json.RawMessage(fmt.Sprintf(`{"system": "agent %d"}`, i))}
	}
	if _, err := s.admin.Import(ctx, client.ImportAllOrNothing, batch); err != nil {
		t.Fatal(err)
	}
	tricky := `{"system": "Line one.\nLine two: {{who}}\n\n  indented, trailing space \n", "memory": ["true", "007", "", "null", "- dash", "#hash"],
		"tools": [], "model": {"name": "gpt-4o", "temperature": 0.20, "max_tokens": 1e3, "seed": -1},
		"variables": {"who": {"default": "ünïcødé: \"quoted\""}}}`
	if _, err := s.admin.CreateVersion(ctx, "support", client.CreateVersionRequest{Config: json.RawMessage(tricky)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.admin.CreateVersion(ctx, "support", client.CreateVersionRequest{BaseVersion: 1, Config: json.RawMessage(strings.Replace(tricky, "Line one.", "Line 1.", 1))}); err != nil {
		t.Fatal(err)
	}

	dir := filepath.Join(t.TempDir(), "prompts")
	r := s.ctl(t, "pull", dir)
	if r.code != exitOK || !strings.Contains(r.stdout, fmt.Sprintf("pulled %d agent(s) into %s", n+1, dir)) {
		t.Fatalf("pull:\n%s", r)
	}
	if l := readLockT(t, dir); len(l) != n+1 || l["support"].Version != 2 || l["bulk-519"].Version != 1 {
		t.Fatalf("lock file: %d entries, support %+v", len(l), l["support"])
	}
	b, _ := os.ReadFile(filepath.Join(dir, "support.yaml"))
	t.Logf("support.yaml:\n%s", b)
	r = s.ctl(t, "apply", "-f", dir)
	if r.code != exitOK || !strings.Contains(r.stdout, fmt.Sprintf("0 created, %d unchanged, 0 conflict", n+1)) {
		t.Fatalf("apply after pull:\n%s", r)
	}

	// A pulled file, edited, is the next version (the lock file names the base).
	writeFile(t, dir, "bulk-000.yaml", promptYAML("bulk-000", "edited"))
	if r = s.ctl(t, "apply", "-f", dir); r.code != exitOK || !strings.Contains(r.stdout, "1 created") {
		t.Fatalf("apply of an edit:\n%s", r)
	}
}

// TestPull_overEditedFiles_refusesUnlessForced: pull never overwrites a
// change not applied yet (exit 1, nothing written) unless --force; it
// replaces the file that defines an agent, whatever its name, and drops
// lock entries of agents promptd does not have.
func TestPull_overEditedFiles_refusesUnlessForced(t *testing.T) {
	s := startPromptd(t)
	dir := t.TempDir()
	writeFile(t, dir, "my-support.yaml", promptYAML("support", "v1"))
	if r := s.ctl(t, "apply", "-f", dir); r.code != exitOK {
		t.Fatalf("apply:\n%s", r)
	}
	if _, err := s.admin.CreateVersion(t.Context(), "support", client.CreateVersionRequest{BaseVersion: 1,
		Config: json.RawMessage(`{"system": "v2 from someone else"}`)}); err != nil {
		t.Fatal(err)
	}
	lock := readLockT(t, dir)
	lock["gone"] = lockEntry{Version: 4, ContentHash: "sha256:00"}
	if err := writeLock(dir, &lockFile{Agents: lock}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "my-support.yaml", promptYAML("support", "my edit"))
	r := s.ctl(t, "pull", dir)
	if r.code != exitFailed || !strings.Contains(r.stderr, "my-support.yaml changed since") || r.stdout != "" {
		t.Fatalf("pull over an edit:\n%s", r)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "my-support.yaml")); !strings.Contains(string(b), "my edit") {
		t.Fatalf("the edit was overwritten:\n%s", b)
	}
	if l := readLockT(t, dir); l["support"].Version != 1 || l["gone"].Version != 4 {
		t.Fatalf("a refused pull wrote the lock file: %+v", l)
	}

	r = s.ctl(t, "pull", dir, "--force")
	if r.code != exitOK || !strings.Contains(r.stdout, "dropped") {
		t.Fatalf("pull --force:\n%s", r)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "my-support.yaml")); !strings.Contains(string(b), "v2 from someone else") {
		t.Fatalf("my-support.yaml after pull --force:\n%s", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "support.yaml")); err == nil {
		t.Fatal("pull wrote a second file for support")
	}
	if l := readLockT(t, dir); len(l) != 1 || l["support"].Version != 2 {
		t.Fatalf("lock after pull --force: %+v", l)
	}
	if r = s.ctl(t, "apply", "-f", dir); r.code != exitOK || !strings.Contains(r.stdout, "0 created, 1 unchanged") {
		t.Fatalf("apply after pull:\n%s", r)
	}
	if r = s.ctl(t, "pull", dir, "--agent", "nobody"); r.code != exitFailed || !strings.Contains(r.stderr, "promptd has no agent nobody") {
		t.Fatalf("pull --agent nobody:\n%s", r)
	}
}

// TestAudit_newestFirstByDefault_oldestFirstOnRequest.
func TestAudit_newestFirstByDefault_oldestFirstOnRequest(t *testing.T) {
	s := startPromptd(t)
	dir := t.TempDir()
	for _, v := range []string{"v1", "v2", "v3"} {
		writeFile(t, dir, "support.yaml", promptYAML("support", v))
		if r := s.ctl(t, "apply", "-f", dir); r.code != exitOK {
			t.Fatalf("apply:\n%s", r)
		}
	}
	first := func(args ...string) string {
		r := s.ctl(t, append([]string{"audit", "--action", "version.created", "--output", "json"}, args...)...)
		var p client.Page[client.AuditEvent]
		if err := json.Unmarshal([]byte(r.stdout), &p); err != nil || len(p.Items) == 0 {
			t.Fatalf("audit %v: %v\n%s", args, err, r)
		}
		return p.Items[0].Resource
	}
	if got := first(); got != "agents/support/versions/3" {
		t.Errorf("audit: first is %s, want the newest", got)
	}
	if got := first("--limit", "1"); got != "agents/support/versions/3" {
		t.Errorf("audit --limit 1: %s, want the newest", got)
	}
	if got := first("--oldest-first"); got != "agents/support/versions/1" {
		t.Errorf("audit --oldest-first: first is %s", got)
	}
}

// TestApply_lockFileConflicts_adviseAPullNotAHandEdit: the two conflicts
// the lock file alone causes (promptd has the agent but the lock file no
// entry; the lock file names an agent promptd does not have) say to run
// promptctl pull, never to edit the lock file, and following the advice
// works.
func TestApply_lockFileConflicts_adviseAPullNotAHandEdit(t *testing.T) {
	s := startPromptd(t)
	dir := t.TempDir()
	if _, err := s.admin.CreateVersion(t.Context(), "support", client.CreateVersionRequest{Config: json.RawMessage(`{"system": "theirs"}`)}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "support.yaml", promptYAML("support", "mine"))
	writeFile(t, dir, "ghost.yaml", promptYAML("ghost", "boo"))
	if err := writeLock(dir, &lockFile{Agents: map[string]lockEntry{"ghost": {Version: 3, ContentHash: "sha256:00"}}}); err != nil {
		t.Fatal(err)
	}
	r, items := s.applyJSON(t, "-f", dir)
	if r.code != exitConflict || statuses(items) != "ghost=conflict support=conflict" {
		t.Fatalf("apply: %s\n%s", statuses(items), r)
	}
	for _, it := range items {
		if want := "promptctl pull " + dir + " --agent " + it.Agent; !strings.Contains(it.Detail, want) || strings.Contains(it.Detail, "entry in") {
			t.Errorf("%s: want advice %q and no hand edit of the lock file:\n%s", it.Agent, want, it.Detail)
		}
	}
	// Following the advice: keep a copy, pull, redo the change, apply.
	if r = s.ctl(t, "pull", dir, "--agent", "support", "--force"); r.code != exitOK {
		t.Fatalf("pull support:\n%s", r)
	}
	if r = s.ctl(t, "pull", dir, "--agent", "ghost"); r.code != exitOK || !strings.Contains(r.stdout, "dropped") {
		t.Fatalf("pull ghost:\n%s", r)
	}
	writeFile(t, dir, "support.yaml", promptYAML("support", "mine"))
	r, items = s.applyJSON(t, "-f", dir)
	if r.code != exitOK || statuses(items) != "ghost=created support=created" || items[1].Version != 2 {
		t.Fatalf("apply after the pulls: %s\n%s", statuses(items), r)
	}
}
