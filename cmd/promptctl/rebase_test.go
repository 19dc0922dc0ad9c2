package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promptd/promptd/api/client"
)

func supportJSON(refunds, tone string, temperature string, memory ...string) string {
	mem, _ := json.Marshal(memory)
	return `{"agent": "support", "config": {"system": "You help.", "skills": [{"name": "refunds", "instructions": "` + refunds + `"}, ` +
		`{"name": "tone", "instructions": "` + tone + `"}], "model": {"name": "gpt-4o", "temperature": ` + temperature + `}, "memory": ` + string(mem) + `}}`
}

// TestApply_rebase_twoStaleBranchesMerge_overlapsPrintAsADiff: two
// branches taken at version 1 each change a different skill; the first
// applies, the second is a conflict without --rebase and merges with it
// (the merged version names both parents, the file holds the merged
// config, a second apply changes nothing). Two branches that change the
// same setting: the rebase publishes nothing and prints the overlap as a
// diff, exit 3.
func TestApply_rebase_twoStaleBranchesMerge_overlapsPrintAsADiff(t *testing.T) {
	s := startPromptd(t)
	main := t.TempDir()
	writeFile(t, main, "support.json", supportJSON("Within 30 days.", "Be brief.", "0.2"))
	if r := s.ctl(t, "apply", "-f", main); r.code != exitOK {
		t.Fatalf("apply v1:\n%s", r)
	}
	a, b := copyDir(t, main), copyDir(t, main) // two branches at version 1
	writeFile(t, a, "support.json", supportJSON("Within 60 days.", "Be brief.", "0.2"))
	if r := s.ctl(t, "apply", "-f", a); r.code != exitOK {
		t.Fatalf("branch a:\n%s", r)
	}
	writeFile(t, b, "support.json", supportJSON("Within 30 days.", "Be warm.", "0.2", "VIP customers first."))
	if r := s.ctl(t, "apply", "-f", b); r.code != exitConflict {
		t.Fatalf("branch b without --rebase must conflict:\n%s", r)
	}
	r := s.ctl(t, "apply", "-f", b, "--rebase")
	t.Logf("branch b, --rebase:\n%s", r.stdout)
	if r.code != exitOK || !strings.Contains(r.stdout, "merged your changes since version 1 over version 2") {
		t.Fatalf("branch b --rebase:\n%s", r)
	}
	v, err := s.admin.GetVersion(t.Context(), "support", 3)
	if err != nil || v.Merge == nil || v.Merge.BaseVersion != 1 || v.Merge.TheirsVersion != 2 {
		t.Fatalf("v3 = %+v %v", v, err)
	}
	for _, want := range []string{"Within 60 days.", "Be warm.", "VIP customers first."} {
		if !strings.Contains(string(v.Config), want) {
			t.Fatalf("merged v3 lacks %q: %s", want, v.Config)
		}
	}
	file, _ := os.ReadFile(filepath.Join(b, "support.json"))
	if !strings.Contains(string(file), "Within 60 days.") || readLockT(t, b)["support"].Version != 3 {
		t.Fatalf("branch b's file was not rebased: %s", file)
	}
	if r := s.ctl(t, "apply", "-f", b); r.code != exitOK || !strings.Contains(r.stdout, "0 created, 1 unchanged") {
		t.Fatalf("re-apply after the rebase:\n%s", r)
	}

	// both change the temperature: nothing published, the overlap as a diff
	c, d := copyDir(t, b), copyDir(t, b)
	writeFile(t, c, "support.json", supportJSON("Within 60 days.", "Be warm.", "0.7", "VIP customers first."))
	if r := s.ctl(t, "apply", "-f", c); r.code != exitOK {
		t.Fatalf("branch c:\n%s", r)
	}
	writeFile(t, d, "support.json", supportJSON("Within 60 days.", "Be warm.", "0.9", "VIP customers first."))
	r = s.ctl(t, "apply", "-f", d, "--rebase")
	t.Logf("branch d, --rebase:\n%s", r.stdout)
	if r.code != exitConflict {
		t.Fatalf("branch d --rebase must conflict:\n%s", r)
	}
	for _, want := range []string{"@@ model.temperature (base v3: 0.2) @@", "-0.7", "+0.9", "--- support/v4 (promptd, theirs)"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("the conflict diff lacks %q:\n%s", want, r.stdout)
		}
	}
	vs, _ := s.admin.ListVersions(t.Context(), "support", client.ListOptions{})
	if vs.Items[0].Version != 4 {
		t.Fatalf("a conflicting rebase published version %d", vs.Items[0].Version)
	}
}
