package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/promptd/promptd/api/client"
)

// applyFragJSON runs apply with --output json and decodes both tables.
func (s *testServer) applyFragJSON(t *testing.T, args ...string) (result, []fragItem, []planItem) {
	t.Helper()
	r := s.ctl(t, append([]string{"apply", "--output", "json"}, args...)...)
	var rep struct {
		Fragments []fragItem `json:"fragments"`
		Items     []planItem `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("apply report: %v\n%s", err, r)
	}
	return r, rep.Fragments, rep.Items
}

func fragStatuses(items []fragItem) string {
	var s []string
	for _, it := range items {
		s = append(s, it.Fragment+"="+it.Status)
	}
	return strings.Join(s, " ")
}

// pinnedFragment is the fragment version agent's version pins under alias.
func (s *testServer) pinnedFragment(t *testing.T, agent string, version int, alias string) int {
	t.Helper()
	v, err := s.admin.GetVersion(t.Context(), agent, version)
	if err != nil {
		t.Fatal(err)
	}
	refs := configRefs(v.Config)
	if _, ok := refs[alias]; !ok {
		t.Fatalf("%s v%d pins no %s: %s", agent, version, alias, v.Config)
	}
	return refs[alias].Version
}

func fragmentYAML(text string) string {
	return "name: safety\ntext: \"" + text + "\"\nvariables:\n  company:\n    default: ACME\nenvs: [prod]\n"
}

// TestFragment_applyPublishesFragmentsFirst_andAgentsPinThem: a fragment
// used by 2 agents (support by env prod, billing by version 1) applied from
// files; applying again is a no-op; a changed fragment file is shown by
// the dry run (which writes nothing), then published as v2 with prod
// moved, and support's next version pins v2 while billing stays on v1;
// pull into a new directory, then apply from it, is a no-op.
func TestFragment_applyPublishesFragmentsFirst_andAgentsPinThem(t *testing.T) {
	s := startPromptd(t)
	ctx := t.Context()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, fragmentsDir), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, fragmentsDir), "safety.yaml", fragmentYAML("Never share secrets of {{company}}."))
	writeFile(t, dir, "support.yaml", "agent: support\nconfig:\n  system: \"You help {{customer}}. {{> safety}}\"\n"+
		"  variables:\n    customer:\n      required: true\n  fragments:\n    safety: {name: safety, env: prod}\n")
	writeFile(t, dir, "billing.yaml", "agent: billing\nconfig:\n  system: \"You bill. {{> safety}}\"\n"+
		"  fragments:\n    safety: {name: safety, version: 1}\n")

	r, frags, items := s.applyFragJSON(t, "-f", dir)
	if r.code != exitOK || fragStatuses(frags) != "safety=created" || statuses(items) != "billing=created support=created" {
		t.Fatalf("first apply: %s / %s\n%s", fragStatuses(frags), statuses(items), r)
	}
	if sw := frags[0].Envs; len(sw) != 1 || sw[0].Env != "prod" || sw[0].To != 1 || sw[0].Result != "switched" {
		t.Fatalf("prod switch: %+v", sw)
	}
	if e, err := s.admin.GetFragmentEnv(ctx, "safety", "prod"); err != nil || e.Version != 1 {
		t.Fatalf("prod = %+v, %v", e, err)
	}
	if v := s.pinnedFragment(t, "support", 1, "safety"); v != 1 {
		t.Fatalf("support v1 pins safety v%d", v)
	}
	if l, _ := readLock(dir); l.Fragments["safety"].Version != 1 || l.Agents["support"].Version != 1 {
		t.Fatalf("lock = %+v", l)
	}

	// Nothing changed: nothing is published (the agents' stored configs
	// embed the fragment, so promptd's dry run decides, not the file's hash).
	r, frags, items = s.applyFragJSON(t, "-f", dir)
	if r.code != exitOK || fragStatuses(frags) != "safety=unchanged" || statuses(items) != "billing=unchanged support=unchanged" ||
		frags[0].Envs[0].Result != "already" {
		t.Fatalf("second apply: %s / %s\n%s", fragStatuses(frags), statuses(items), r)
	}

	// The fragment changes: the dry run shows it and the agent it would
	// reach, and writes nothing.
	writeFile(t, filepath.Join(dir, fragmentsDir), "safety.yaml", fragmentYAML("Never share anything of {{company}}."))
	lockBefore, _ := os.ReadFile(filepath.Join(dir, lockName))
	r = s.ctl(t, "apply", "-f", dir, "--dry-run")
	for _, want := range []string{"fragments/safety.yaml  create", "2 (planned)", `-  "text": "Never share secrets of {{company}}."`,
		`+  "text": "Never share anything of {{company}}."`, "planned", "would pin a new fragment version: fragment safety (alias safety) env prod would point at version 2",
		"fragments: 0 created, 0 unchanged, 0 conflict, 0 invalid or failed (dry run: 1 to create)",
		"0 created, 1 unchanged, 0 conflict, 0 invalid or failed (dry run: 1 to create, nothing changed)"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("dry run lacks %q:\n%s", want, r)
		}
	}
	if r.code != exitOK {
		t.Fatalf("dry run: %s", r)
	}
	if fs, err := s.admin.AllFragments(ctx); err != nil || len(fs) != 1 || fs[0].LatestVersion != 1 || fs[0].Envs["prod"] != 1 {
		t.Fatalf("a dry run wrote: %+v, %v", fs, err)
	}
	if ag, err := s.admin.AllAgents(ctx); err != nil || ag[0].LatestVersion != 1 || ag[1].LatestVersion != 1 {
		t.Fatalf("a dry run wrote: %+v, %v", ag, err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, lockName)); string(after) != string(lockBefore) {
		t.Fatalf("a dry run wrote the lock file:\n%s", after)
	}

	r, frags, items = s.applyFragJSON(t, "-f", dir)
	if r.code != exitOK || fragStatuses(frags) != "safety=created" || frags[0].Version != 2 || statuses(items) != "billing=unchanged support=created" {
		t.Fatalf("apply of the change: %s / %s\n%s", fragStatuses(frags), statuses(items), r)
	}
	if e, err := s.admin.GetFragmentEnv(ctx, "safety", "prod"); err != nil || e.Version != 2 || e.Revision != 2 {
		t.Fatalf("prod = %+v, %v", e, err)
	}
	if v := s.pinnedFragment(t, "support", 2, "safety"); v != 2 {
		t.Fatalf("support v2 pins safety v%d, want 2", v)
	}
	if v := s.pinnedFragment(t, "billing", 1, "safety"); v != 1 {
		t.Fatalf("billing v1 pins safety v%d, want 1", v)
	}
	if vs, err := s.admin.ListVersions(ctx, "billing", client.ListOptions{}); err != nil || len(vs.Items) != 1 {
		t.Fatalf("billing got a new version: %+v, %v", vs, err)
	}

	// Pull into a new directory, then apply from it: a no-op.
	pulledDir := t.TempDir()
	if r := s.ctl(t, "pull", pulledDir); r.code != exitOK || !strings.Contains(r.stdout, "pulled 2 agent(s) and 1 fragment(s)") {
		t.Fatalf("pull: %s", r)
	}
	frag, err := os.ReadFile(filepath.Join(pulledDir, fragmentsDir, "safety.yaml"))
	if err != nil || !strings.Contains(string(frag), "Never share anything of {{company}}.") || !strings.Contains(string(frag), "prod") {
		t.Fatalf("pulled fragment file: %s, %v", frag, err)
	}
	sup, _ := os.ReadFile(filepath.Join(pulledDir, "support.yaml"))
	if strings.Contains(string(sup), "content_hash") || strings.Contains(string(sup), "Never share") || !strings.Contains(string(sup), "env: prod") ||
		strings.Contains(string(sup), "company") {
		t.Fatalf("pulled support.yaml holds the pinned content, not the reference:\n%s", sup)
	}
	r, frags, items = s.applyFragJSON(t, "-f", pulledDir)
	if r.code != exitOK || fragStatuses(frags) != "safety=unchanged" || statuses(items) != "billing=unchanged support=unchanged" {
		t.Fatalf("apply after pull: %s / %s\n%s", fragStatuses(frags), statuses(items), r)
	}
	if r := s.ctl(t, "pull", pulledDir); r.code != exitOK || !strings.Contains(r.stdout, "unchanged") || strings.Contains(r.stdout, "written") {
		t.Fatalf("pull again: %s", r)
	}
}

// TestFragment_staleBase_isAConflict_andItsAgentsWait: a fragment version
// published by someone else between apply's read and its create (a proxy
// in front of promptd publishes it just before forwarding apply's create)
// is a conflict (exit 3, with the diff), nothing is published for the
// fragment, and the agent that references it is not published either,
// while an agent that does not is; the control: the same apply without the
// racing writer publishes everything.
func TestFragment_staleBase_isAConflict_andItsAgentsWait(t *testing.T) {
	s := startPromptd(t)
	ctx := t.Context()
	target, _ := url.Parse(s.p.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var raced, race atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if race.Load() && r.Method == http.MethodPost && r.URL.Path == "/v1/fragments/safety/versions" &&
			r.URL.Query().Get("dry_run") == "" && !raced.Swap(true) {
			fs, err := s.admin.AllFragments(ctx)
			base := 0
			if err == nil && len(fs) > 0 {
				base = fs[0].LatestVersion
			}
			text := "Someone else's text."
			if _, err := s.admin.CreateFragmentVersion(ctx, "safety", client.CreateFragmentVersionRequest{BaseVersion: base,
				Fragment: client.FragmentContent{Text: &text}}); err != nil {
				t.Errorf("the racing writer: %v", err)
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	defer srv.Close()
	ctl := func(args ...string) result {
		env := map[string]string{"PROMPTD_URL": srv.URL, "PROMPTD_TOKEN": adminSecret}
		var out, errb bytes.Buffer
		code := run(ctx, args, func(k string) string { return env[k] }, &out, &errb)
		return result{code, out.String(), errb.String()}
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, fragmentsDir), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, fragmentsDir), "safety.yaml", fragmentYAML("Never share secrets of {{company}}."))
	writeFile(t, dir, "support.yaml", "agent: support\nconfig:\n  system: \"You help. {{> safety}}\"\n  fragments:\n    safety: {name: safety, env: prod}\n")
	writeFile(t, dir, "billing.yaml", promptYAML("billing", "You bill."))

	race.Store(true)
	r := ctl("apply", "-f", dir)
	if r.code != exitConflict || !raced.Load() {
		t.Fatalf("apply with a racing writer: want exit %d\n%s", exitConflict, r)
	}
	for _, want := range []string{"conflict fragment safety: promptd's latest version of fragment safety is 1, not 0 as read",
		"failed support: not published: it references fragment safety, which this apply did not apply",
		"billing  billing.yaml  created", "conflict: fragment safety"} {
		if !strings.Contains(r.stdout+r.stderr, want) {
			t.Fatalf("apply with a racing writer lacks %q:\n%s", want, r)
		}
	}
	if fs, _ := s.admin.AllFragments(ctx); len(fs) != 1 || fs[0].LatestVersion != 1 || len(fs[0].Envs) != 0 {
		t.Fatalf("fragments after the conflict: %+v (want only the other writer's v1, no pointer)", fs)
	}
	if _, err := s.admin.GetVersion(ctx, "support", 1); err == nil {
		t.Fatal("support was published over a fragment that conflicted")
	}
	if l, _ := readLock(dir); l.Fragments["safety"].Version != 0 || l.Agents["billing"].Version != 1 {
		t.Fatalf("lock after the conflict: %+v", l)
	}

	// The control: without the racing writer the same files apply (the
	// fragment over promptd's latest, v1, as it reads it now).
	race.Store(false)
	r = ctl("apply", "-f", dir)
	if r.code != exitOK || !strings.Contains(r.stdout, "safety    fragments/safety.yaml  created  1     2") {
		t.Fatalf("apply without the racing writer:\n%s", r)
	}
	if v := s.pinnedFragment(t, "support", 1, "safety"); v != 2 {
		t.Fatalf("support v1 pins safety v%d, want 2", v)
	}
}

// TestPull_fragmentFileEditedSinceApplied_isNotOverwritten: pull refuses
// to replace a fragment file changed since it was last applied (exit 1,
// nothing written), and --force replaces it with promptd's version.
func TestPull_fragmentFileEditedSinceApplied_isNotOverwritten(t *testing.T) {
	s := startPromptd(t)
	dir := t.TempDir()
	fdir := filepath.Join(dir, fragmentsDir)
	if err := os.Mkdir(fdir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, fdir, "safety.yaml", fragmentYAML("Be careful."))
	writeFile(t, dir, "support.yaml", "agent: support\nconfig:\n  system: \"{{> safety}}\"\n  fragments:\n    safety: {name: safety, version: 1}\n")
	if r := s.ctl(t, "apply", "-f", dir); r.code != exitOK {
		t.Fatalf("apply: %s", r)
	}
	writeFile(t, fdir, "safety.yaml", fragmentYAML("Be very careful."))
	r := s.ctl(t, "pull", dir)
	if r.code != exitFailed || !strings.Contains(r.stderr, "not pulled: "+filepath.Join(fragmentsDir, "safety.yaml")) {
		t.Fatalf("pull over an edited fragment file: %s", r)
	}
	if b, _ := os.ReadFile(filepath.Join(fdir, "safety.yaml")); !strings.Contains(string(b), "Be very careful.") {
		t.Fatalf("the edited file was replaced:\n%s", b)
	}
	if r := s.ctl(t, "pull", dir, "--force"); r.code != exitOK {
		t.Fatalf("pull --force: %s", r)
	}
	if b, _ := os.ReadFile(filepath.Join(fdir, "safety.yaml")); !strings.Contains(string(b), "Be careful.") || strings.Contains(string(b), "very") {
		t.Fatalf("pull --force did not write promptd's version:\n%s", b)
	}
}
