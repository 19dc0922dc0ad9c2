package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/promptd/promptd/api/client"
)

// A guarded release started from the CLI shows its guard in release
// status, by id and in the env's list.
func TestReleaseStatus_ofAGuardedRelease_showsTheGuardAndItsState(t *testing.T) {
	s := startPromptd(t)
	dir := t.TempDir()
	writeFile(t, dir, "support.yaml", promptYAML("support", "v1"))
	if r := s.ctl(t, "apply", "-f", dir, "--env", "prod"); r.code != exitOK {
		t.Fatalf("apply:\n%s", r)
	}
	writeFile(t, dir, "support.yaml", promptYAML("support", "v2"))
	if r := s.ctl(t, "apply", "-f", dir); r.code != exitOK {
		t.Fatalf("apply v2:\n%s", r)
	}
	r := s.ctl(t, "release", "start", "support", "prod", "--percent", "20", "--guard", "failure_rate:2:rollback", "--output", "json")
	var rel client.Release
	if err := json.Unmarshal([]byte(r.stdout), &rel); err != nil || rel.Guard == nil || rel.Guard.Action != "rollback" {
		t.Fatalf("release start --guard: %v\n%s", err, r)
	}
	r = s.ctl(t, "release", "status", rel.ID)
	if r.code != exitOK || !strings.Contains(r.stdout, "guard: failure_rate, max degradation 2 points at 0.95 confidence, min 200 samples an arm, action rollback, gate_steps true: collecting") {
		t.Fatalf("release status:\n%s", r)
	}
	if r = s.ctl(t, "release", "status", "support", "prod"); r.code != exitOK || !strings.Contains(r.stdout, "collecting") {
		t.Fatalf("release status AGENT ENV:\n%s", r)
	}
	if r = s.ctl(t, "release", "start", "support", "prod", "--percent", "20", "--guard", "failure_rate"); r.code == exitOK {
		t.Fatalf("a malformed --guard was accepted:\n%s", r)
	}
}
