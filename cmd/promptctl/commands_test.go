package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/promptd/promptd/api/client"
)

// TestRelease_rolloutPromoteAndRollback drives a rollout from the CLI:
// start at 10 %, set 50, pause and resume, promote; then roll the env back.
func TestRelease_rolloutPromoteAndRollback(t *testing.T) {
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
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"release", "start", "support", "prod", "--percent", "10"}, "candidate 2 at 10% (baseline 1)"},
		{[]string{"release", "set", "support", "prod", "50"}, "10% -> 50% of callers get version 2"},
		{[]string{"release", "pause", "support", "prod"}, "is paused"},
		{[]string{"release", "resume", "support", "prod"}, "is running"},
		{[]string{"envs", "support", "prod"}, "release: rel_"},
		{[]string{"release", "promote", "support", "prod"}, "support/prod now points at version 2"},
		{[]string{"release", "status", "support", "prod"}, "promoted"},
		{[]string{"versions", "support"}, "promptctl apply support.yaml"},
		{[]string{"diff", "support", "1", "2"}, `+  "system": "v2"`},
		{[]string{"get", "support", "2"}, `"temperature": 0.20`},
		{[]string{"rollback", "support", "prod"}, "version 2 -> 1; version 2 is revoked there"},
		{[]string{"agents"}, "prod=1"},
		{[]string{"audit", "--agent", "support", "--action", "env.rolled_back"}, "env.rolled_back"},
	}
	for _, st := range steps {
		r := s.ctl(t, st.args...)
		if r.code != exitOK || !strings.Contains(r.stdout, st.want) {
			t.Fatalf("%v: want %q in\n%s", st.args, st.want, r)
		}
	}
	e, err := s.admin.GetEnv(t.Context(), "support", "prod")
	if err != nil || e.Version != 1 || !e.IsRevoked(2) || e.Release != nil {
		t.Fatalf("env after rollback: %+v, %v", e, err)
	}

	// A release rolled back leaves the baseline and revokes the candidate.
	writeFile(t, dir, "support.yaml", promptYAML("support", "v3"))
	s.ctl(t, "apply", "-f", dir)
	r := s.ctl(t, "release", "start", "support", "prod", "--candidate", "3", "--percent", "5", "--step", "25@1h", "--step", "promote@2h", "--output", "json")
	var rel client.Release
	if err := json.Unmarshal([]byte(r.stdout), &rel); err != nil || len(rel.Steps) != 2 || rel.NextStepAt == nil {
		t.Fatalf("release with steps: %v\n%s", err, r)
	}
	if r := s.ctl(t, "release", "rollback", rel.ID); r.code != exitOK || !strings.Contains(r.stdout, "stays at version 1; version 3 is revoked") {
		t.Fatalf("release rollback:\n%s", r)
	}
	if r := s.ctl(t, "release", "pause", rel.ID); r.code != exitConflict || !strings.Contains(r.stderr, "invalid_transition") {
		t.Fatalf("pausing a rolled-back release:\n%s", r)
	}
}

// TestErrors_messagesNameTheProblemAndTheFix: usage, auth, not found and
// unreachable errors say what is wrong and what to do.
func TestErrors_messagesNameTheProblemAndTheFix(t *testing.T) {
	s := startPromptd(t)
	dir := t.TempDir()
	writeFile(t, dir, "support.yaml", promptYAML("support", "v1"))
	cases := []struct {
		token string
		args  []string
		code  int
		want  string
	}{
		{adminSecret, []string{}, exitUsage, "usage: promptctl"},
		{adminSecret, []string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{adminSecret, []string{"get", "support"}, exitUsage, "usage: promptctl get AGENT VERSION"},
		{adminSecret, []string{"get", "support", "x"}, exitUsage, `"x" is not a version number`},
		{adminSecret, []string{"apply"}, exitUsage, "-f DIR|FILE is required"},
		{"", []string{"agents"}, exitUsage, "no token: set PROMPTD_TOKEN"},
		{"wrong-token-0123456789", []string{"agents"}, exitFailed, "check --token or PROMPTD_TOKEN"},
		{runtimeSecret, []string{"apply", "-f", dir}, exitFailed, "this needs an admin token"},
		{adminSecret, []string{"get", "nobody", "1"}, exitFailed, "agent_not_found"},
		{adminSecret, []string{"agents", "--server", "http://127.0.0.1:1"}, exitFailed, "cannot reach promptd at http://127.0.0.1:1"},
		{adminSecret, []string{"agents", "--output", "yaml"}, exitUsage, "--output must be table or json"},
	}
	for _, c := range cases {
		r := s.ctlAs(t, c.token, c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: want exit %d and %q in stderr, got\n%s", c.args, c.code, c.want, r)
		}
	}
}

// TestEnvsSet_pointsTheEnv_aStaleRevisionIsAConflict: envs set creates and
// moves a pointer; a revision someone moved meanwhile is exit 3 and the
// pointer stays.
func TestEnvsSet_pointsTheEnv_aStaleRevisionIsAConflict(t *testing.T) {
	s := startPromptd(t)
	dir := t.TempDir()
	writeFile(t, dir, "support.yaml", promptYAML("support", "v1"))
	if r := s.ctl(t, "apply", "-f", dir); r.code != exitOK {
		t.Fatalf("apply v1:\n%s", r)
	}
	writeFile(t, dir, "support.yaml", promptYAML("support", "v2"))
	if r := s.ctl(t, "apply", "-f", dir); r.code != exitOK {
		t.Fatalf("apply v2:\n%s", r)
	}
	if r := s.ctl(t, "envs", "set", "support", "prod", "1"); r.code != exitOK || !strings.Contains(r.stdout, "support/prod now points at version 1 (revision 1)") {
		t.Fatalf("envs set (create):\n%s", r)
	}
	if r := s.ctl(t, "envs", "set", "support", "prod", "2", "--reason", "v2 is better"); r.code != exitOK || !strings.Contains(r.stdout, "now points at version 2 (revision 2)") {
		t.Fatalf("envs set (move):\n%s", r)
	}
	r := s.ctl(t, "envs", "set", "support", "prod", "1", "--expected-revision", "1")
	if r.code != exitConflict {
		t.Fatalf("a stale revision must conflict:\n%s", r)
	}
	if e, err := s.admin.GetEnv(t.Context(), "support", "prod"); err != nil || e.Version != 2 {
		t.Fatalf("the pointer moved: %+v %v", e, err)
	}
	if r := s.ctl(t, "envs", "set", "support", "prod", "x"); r.code != exitUsage {
		t.Fatalf("a bad version must be a usage error:\n%s", r)
	}
}
