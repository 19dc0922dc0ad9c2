package main

import (
	"bytes"
	"context"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// convention is one row of the CLI conventions table: a command line,
// its exit status, and the one stream that has output.
type convention struct {
	args   []string
	code   int
	stream string // "stdout" or "stderr"; the other stays empty
	want   string // in that stream
}

// TestCLI_conventionsTable: help (help CMD, CMD --help, CMD -h, for every
// command and subcommand) and --version print on stdout and exit 0;
// usage errors (unknown command or flag, missing argument) print a short
// message naming `promptctl help CMD` on stderr and exit 2; runtime
// errors (promptd unreachable, a missing file) exit 1 on stderr.
func TestCLI_conventionsTable(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "support.yaml", promptYAML("support", "v1"))
	missing := filepath.Join(dir, "nope")
	var rows []convention
	names := make([]string, 0, len(docs))
	for name := range docs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		words := strings.Fields(name)
		synopsis := "usage: promptctl " + name
		for _, args := range [][]string{append([]string{"help"}, words...), append(words, "--help"), append(words, "-h")} {
			rows = append(rows, convention{args, exitOK, "stdout", synopsis})
		}
	}
	for name := range commands {
		if _, ok := docs[name]; !ok {
			t.Errorf("command %s has no help", name)
		}
	}
	rows = append(rows,
		convention{[]string{"help"}, exitOK, "stdout", "run 'promptctl help COMMAND'"},
		convention{[]string{"--help"}, exitOK, "stdout", "commands:"},
		convention{[]string{"-h"}, exitOK, "stdout", "commands:"},
		convention{[]string{"--version"}, exitOK, "stdout", "promptctl "},
		convention{[]string{}, exitUsage, "stderr", "no command given"},
		convention{[]string{"frobnicate"}, exitUsage, "stderr", "run 'promptctl help'"},
		convention{[]string{"--bogus", "agents"}, exitUsage, "stderr", "run 'promptctl help'"},
		convention{[]string{"help", "frobnicate"}, exitUsage, "stderr", "run 'promptctl help help'"},
	)
	usage := func(help string, args ...string) convention {
		return convention{args, exitUsage, "stderr", "run 'promptctl help " + help + "'"}
	}
	rows = append(rows,
		// unknown flags
		usage("apply", "apply", "-f", dir, "--bogus"), usage("pull", "pull", dir, "--bogus"), usage("agents", "agents", "--bogus"),
		usage("versions", "versions", "support", "--bogus"), usage("get", "get", "support", "1", "--bogus"),
		usage("diff", "diff", "support", "1", "2", "--bogus"), usage("envs", "envs", "support", "--bogus"),
		usage("rollback", "rollback", "support", "prod", "--bogus"), usage("release start", "release", "start", "support", "prod", "--bogus"),
		usage("release set", "release", "set", "support", "prod", "5", "--bogus"), usage("release pause", "release", "pause", "support", "prod", "--bogus"),
		usage("release status", "release", "status", "support", "prod", "--bogus"), usage("sessions", "sessions", "get", "s1", "--bogus"),
		usage("events", "events", "--bogus"), usage("audit", "audit", "--bogus"), usage("tokens list", "tokens", "list", "--bogus"),
		usage("tokens create", "tokens", "create", "ci", "--role", "admin", "--bogus"), usage("tokens revoke", "tokens", "revoke", "ci", "--bogus"),
		usage("approvals list", "approvals", "list", "--bogus"), usage("approvals approve", "approvals", "approve", "cr_1", "--bogus"),
		// missing or extra arguments, unknown subcommands
		usage("apply", "apply"), usage("pull", "pull"), usage("agents", "agents", "extra"), usage("versions", "versions"),
		usage("get", "get", "support"), usage("get", "get", "support", "x"), usage("diff", "diff", "support", "1"), usage("envs", "envs"),
		usage("rollback", "rollback", "support"), usage("release", "release"), usage("release", "release", "frob"),
		usage("release start", "release", "start", "support", "prod"), usage("release status", "release", "status"),
		usage("release promote", "release", "promote"), usage("sessions", "sessions"), usage("sessions", "sessions", "list", "x"),
		usage("events", "events", "extra"), usage("audit", "audit", "extra"), usage("tokens", "tokens"), usage("tokens", "tokens", "frob"),
		usage("tokens create", "tokens", "create", "ci"), usage("tokens revoke", "tokens", "revoke"), usage("approvals", "approvals"),
		usage("approvals show", "approvals", "show"), usage("approvals", "approvals", "frob"),
	)
	// runtime errors: promptd unreachable, or a missing file
	for _, args := range [][]string{
		{"apply", "-f", dir}, {"apply", "-f", missing}, {"pull", dir}, {"agents"}, {"versions", "support"}, {"get", "support", "1"},
		{"diff", "support", "1", "2"}, {"envs", "support"}, {"envs", "support", "prod"}, {"rollback", "support", "prod"},
		{"release", "start", "support", "prod", "--percent", "10"}, {"release", "set", "support", "prod", "50"},
		{"release", "pause", "support", "prod"}, {"release", "resume", "rel_1"}, {"release", "promote", "support", "prod"},
		{"release", "rollback", "support", "prod"}, {"release", "status", "support", "prod"}, {"sessions", "get", "s1"},
		{"events"}, {"audit"}, {"tokens", "list"}, {"tokens", "create", "ci", "--role", "admin"}, {"tokens", "revoke", "ci"},
		{"approvals", "list"}, {"approvals", "show", "cr_1"}, {"approvals", "reject", "cr_1"},
	} {
		rows = append(rows, convention{args, exitFailed, "stderr", "promptctl: "})
	}

	env := map[string]string{"PROMPTD_URL": "http://127.0.0.1:1", "PROMPTD_TOKEN": "some-token"}
	for _, c := range rows {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var out, errb bytes.Buffer
		code := run(ctx, c.args, func(k string) string { return env[k] }, &out, &errb)
		cancel()
		got, other := out.String(), errb.String()
		if c.stream == "stderr" {
			got, other = other, got
		}
		if code != c.code || !strings.Contains(got, c.want) || other != "" {
			t.Errorf("promptctl %s: want exit %d with %q on %s only; got exit %d\n--- stdout\n%s--- stderr\n%s",
				strings.Join(c.args, " "), c.code, c.want, c.stream, code, out.String(), errb.String())
		}
	}
	t.Logf("%d command lines checked", len(rows))
}

// TestVersion_printsTheVersionSetAtBuildTime: --version prints what
// -ldflags "-X main.version=..." set.
func TestVersion_printsTheVersionSetAtBuildTime(t *testing.T) {
	old := version
	version = "v9.8.7-test"
	t.Cleanup(func() { version = old })
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"--version"}, func(string) string { return "" }, &out, &errb); code != exitOK ||
		!strings.HasPrefix(out.String(), "promptctl v9.8.7-test go") || errb.Len() != 0 {
		t.Fatalf("--version: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}
