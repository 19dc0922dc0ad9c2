package main

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/promptd/promptd/api/client"
)

// TestApply_twiceWithNoChange_secondCreatesNothing: the second apply of
// the same files reports every agent unchanged and creates no version.
func TestApply_twiceWithNoChange_secondCreatesNothing(t *testing.T) {
	s := startPromptd(t)
	dir := t.TempDir()
	writeFile(t, dir, "support.yaml", promptYAML("support", "You are helpful."))
	writeFile(t, dir, "billing.json", `{"agent": "billing", "config": {"system": "You bill.", "model": {"name": "gpt-4o", "temperature": 0.20}}}`)

	r := s.ctl(t, "apply", "-f", dir)
	if r.code != exitOK || !strings.Contains(r.stdout, "2 created, 0 unchanged") {
		t.Fatalf("first apply:\n%s", r)
	}
	if l := readLockT(t, dir); l["support"].Version != 1 || l["billing"].Version != 1 {
		t.Fatalf("lock %+v", l)
	}
	r = s.ctl(t, "apply", "-f", dir)
	t.Logf("second apply:\n%s", r.stdout)
	if r.code != exitOK || !strings.Contains(r.stdout, "0 created, 2 unchanged, 0 conflict") {
		t.Fatalf("second apply:\n%s", r)
	}
	ctx := t.Context()
	for _, agent := range []string{"support", "billing"} {
		vs, err := s.admin.ListVersions(ctx, agent, client.ListOptions{})
		if err != nil || len(vs.Items) != 1 {
			t.Fatalf("%s has %d versions, want 1 (%v)", agent, len(vs.Items), err)
		}
	}
	audit, err := s.admin.Audit(ctx, client.AuditQuery{Action: "version.created"})
	if err != nil || len(audit.Items) != 2 {
		t.Fatalf("version.created events: %d, %v", len(audit.Items), err)
	}
}

// TestApply_concurrentRunsFromDifferentBases_oneWinsOtherConflicts: two
// copies of the prompt files, one stale; then two copies racing from the
// same base. Each time exactly one run publishes; the other exits 3 naming
// the agent, nothing it wrote reaches promptd, and its lock file stays.
func TestApply_concurrentRunsFromDifferentBases_oneWinsOtherConflicts(t *testing.T) {
	s := startPromptd(t)
	a := t.TempDir()
	writeFile(t, a, "support.yaml", promptYAML("support", "v1"))
	if r := s.ctl(t, "apply", "-f", a); r.code != exitOK {
		t.Fatalf("apply v1:\n%s", r)
	}
	b := copyDir(t, a) // a branch taken at version 1
	writeFile(t, a, "support.yaml", promptYAML("support", "v2 from main"))
	if r := s.ctl(t, "apply", "-f", a); r.code != exitOK {
		t.Fatalf("apply v2:\n%s", r)
	}

	// A (base 2) and the stale branch B (base 1) apply at the same time.
	writeFile(t, a, "support.yaml", promptYAML("support", "v3 from main"))
	writeFile(t, b, "support.yaml", promptYAML("support", "stale branch edit"))
	ra, rb := parallel(t, s, a, b)
	if ra.code != exitOK || rb.code != exitConflict {
		t.Fatalf("A (base 2) must win, B (base 1) conflict:\nA: %s\nB: %s", ra, rb)
	}
	t.Logf("the stale branch's apply:\n%s", rb)
	for _, want := range []string{"support", "version 1", "Pull/rebase", "promptctl diff support 1"} {
		if !strings.Contains(rb.stdout+rb.stderr, want) {
			t.Fatalf("B's message lacks %q:\n%s", want, rb)
		}
	}
	if l := readLockT(t, b); l["support"].Version != 1 {
		t.Fatalf("B's lock moved: %+v", l)
	}
	checkFate(t, s, "support", 3, "v3 from main", "stale branch edit")

	// C and D, both at base 3, race.
	c, d := copyDir(t, a), copyDir(t, a)
	writeFile(t, c, "support.yaml", promptYAML("support", "edit C"))
	writeFile(t, d, "support.yaml", promptYAML("support", "edit D"))
	rc, rd := parallel(t, s, c, d)
	if (rc.code == exitOK) == (rd.code == exitOK) || rc.code+rd.code != exitConflict {
		t.Fatalf("exactly one must win:\nC: %s\nD: %s", rc, rd)
	}
	win, lose, loser := "edit C", "edit D", d
	if rd.code == exitOK {
		win, lose, loser = "edit D", "edit C", c
	}
	checkFate(t, s, "support", 4, win, lose)
	if l := readLockT(t, loser); l["support"].Version != 3 {
		t.Fatalf("the loser's lock moved: %+v", l)
	}
}

func parallel(t *testing.T, s *testServer, x, y string) (result, result) {
	var wg sync.WaitGroup
	var rx, ry result
	wg.Add(2)
	go func() { defer wg.Done(); rx = s.ctl(t, "apply", "-f", x) }()
	go func() { defer wg.Done(); ry = s.ctl(t, "apply", "-f", y) }()
	wg.Wait()
	return rx, ry
}

// checkFate: the agent's latest version is latest and holds won; no
// version holds lost.
func checkFate(t *testing.T, s *testServer, agent string, latest int, won, lost string) {
	t.Helper()
	vs, err := s.admin.ListVersions(t.Context(), agent, client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs.Items) != latest || vs.Items[0].Version != latest || !strings.Contains(string(vs.Items[0].Config), won) {
		t.Fatalf("latest is %d %s, want %d with %q", vs.Items[0].Version, vs.Items[0].Config, latest, won)
	}
	for _, v := range vs.Items {
		if strings.Contains(string(v.Config), lost) {
			t.Fatalf("version %d holds the losing edit %q", v.Version, lost)
		}
	}
}

// TestApply_staleBranch_showsDiff: a conflict shows the unified diff from
// promptd's latest version to the file, and --dry-run changes nothing.
func TestApply_staleBranch_showsDiff(t *testing.T) {
	s := startPromptd(t)
	dir := t.TempDir()
	writeFile(t, dir, "support.yaml", promptYAML("support", "v1"))
	s.ctl(t, "apply", "-f", dir)
	if _, err := s.admin.CreateVersion(t.Context(), "support", client.CreateVersionRequest{BaseVersion: 1,
		Config: json.RawMessage(`{"system":"hotfix by hand"}`)}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "support.yaml", promptYAML("support", "my edit"))
	r := s.ctl(t, "apply", "-f", dir, "--dry-run")
	if r.code != exitConflict {
		t.Fatalf("dry run:\n%s", r)
	}
	for _, want := range []string{"--- support/v2 (promptd)", "+++ support.yaml (yours)", `-  "system": "hotfix by hand"`, `+  "system": "my edit"`, "by ops"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("missing %q:\n%s", want, r)
		}
	}
	if vs, _ := s.admin.ListVersions(t.Context(), "support", client.ListOptions{}); len(vs.Items) != 2 {
		t.Fatalf("dry run wrote: %d versions", len(vs.Items))
	}
}

// TestApply_atomic_publishesAllOrNothing: with one agent in conflict, or
// one config invalid, --atomic publishes nothing; else all in one import.
func TestApply_atomic_publishesAllOrNothing(t *testing.T) {
	s := startPromptd(t)
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", promptYAML("alpha", "a1"))
	writeFile(t, dir, "b.yaml", promptYAML("beta", "b1"))
	if r := s.ctl(t, "apply", "-f", dir, "--atomic"); r.code != exitOK || !strings.Contains(r.stdout, "2 created") {
		t.Fatalf("atomic apply:\n%s", r)
	}
	if ev, _ := s.admin.Audit(t.Context(), client.AuditQuery{Action: "import.applied"}); len(ev.Items) != 1 {
		t.Fatalf("import.applied events: %d", len(ev.Items))
	}
	if _, err := s.admin.CreateVersion(t.Context(), "beta", client.CreateVersionRequest{BaseVersion: 1, Config: json.RawMessage(`{"system":"b2"}`)}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "a.yaml", promptYAML("alpha", "a2"))
	writeFile(t, dir, "b.yaml", promptYAML("beta", "b-mine"))
	r, items := s.applyJSON(t, "-f", dir, "--atomic")
	if r.code != exitConflict || statuses(items) != "alpha=create beta=conflict" || !strings.Contains(r.stderr, "nothing was published (--atomic)") {
		t.Fatalf("atomic with a conflict: %s\n%s", statuses(items), r)
	}
	writeFile(t, dir, "b.yaml", "agent: beta\nconfig:\n  system: 'Hi {{who}}'\n")
	lock := readLockT(t, dir)
	lock["beta"] = lockEntry{Version: 2}
	if err := writeLock(dir, &lockFile{Agents: lock}); err != nil {
		t.Fatal(err)
	}
	r, items = s.applyJSON(t, "-f", dir, "--atomic")
	if r.code != exitFailed || statuses(items) != "alpha=failed beta=invalid" || !strings.Contains(items[1].Detail, "undeclared_variable") {
		t.Fatalf("atomic with an invalid config: %s\n%s", statuses(items), r)
	}
	if vs, _ := s.admin.ListVersions(t.Context(), "alpha", client.ListOptions{}); len(vs.Items) != 1 {
		t.Fatalf("alpha has %d versions after a rejected batch", len(vs.Items))
	}
}

// TestApply_env_switchesPointers: --env points each agent at its applied
// version, reporting each switch; an active release is a conflict.
func TestApply_env_switchesPointers(t *testing.T) {
	s := startPromptd(t)
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", promptYAML("alpha", "a1"))
	writeFile(t, dir, "b.yaml", promptYAML("beta", "b1"))
	r, items := s.applyJSON(t, "-f", dir, "--env", "prod")
	if r.code != exitOK || items[0].Env == nil || items[0].Env.Result != "switched" || items[1].Env.To != 1 {
		t.Fatalf("apply --env: %+v\n%s", items, r)
	}
	writeFile(t, dir, "a.yaml", promptYAML("alpha", "a2"))
	r = s.ctl(t, "apply", "-f", dir, "--env", "prod")
	if r.code != exitOK || !strings.Contains(r.stdout, "alpha  prod  1     2   2         switched") || !strings.Contains(r.stdout, "already") {
		t.Fatalf("second apply --env:\n%s", r)
	}
	if rr := s.ctl(t, "release", "start", "alpha", "prod", "--candidate", "1", "--percent", "10"); rr.code != exitOK {
		t.Fatalf("release start:\n%s", rr)
	}
	writeFile(t, dir, "a.yaml", promptYAML("alpha", "a3"))
	r = s.ctl(t, "apply", "-f", dir, "--env", "prod")
	t.Logf("apply --env during a release:\n%s", r.stdout)
	if r.code != exitConflict || !strings.Contains(r.stdout, "release_active: env prod of alpha has release") || !strings.Contains(r.stderr, "alpha") {
		t.Fatalf("apply --env during a release:\n%s", r)
	}
	// refused before publishing: no version 3, the lock unmoved
	if l := readLockT(t, dir); l["alpha"].Version != 2 {
		t.Fatalf("the lock moved: %+v", l)
	}
	if vs, _ := s.admin.ListVersions(t.Context(), "alpha", client.ListOptions{}); vs.Items[0].Version != 2 {
		t.Fatalf("apply --env during a release published version %d", vs.Items[0].Version)
	}
}

func TestYAML_numbersAsWritten_hashLikeJSON(t *testing.T) {
	got, err := yamlToJSON([]byte("agent: x\nconfig:\n  system: \"{{ a }}\"\n  model: {temperature: 0.20, n: 1e3, big: 0x10, on: yes}\n  memory: [null, true, '7']\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"agent":"x","config":{"system":"{{ a }}","model":{"temperature":0.20,"n":1e3,"big":16,"on":"yes"},"memory":[null,true,"7"]}}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	for _, bad := range []string{"a: 1\na: 2\n", "a: .inf\n", "<<: {a: 1}\n"} {
		if _, err := yamlToJSON([]byte(bad)); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}
