package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
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
