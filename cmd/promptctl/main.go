// Command promptctl is promptd's admin CLI: prompts as code (apply a
// directory of prompt files with a lock file, so a stale branch is a
// conflict, never a silent overwrite), versions, envs, releases and
// rollbacks, sessions and the audit log. It is built on api/client.
//
//	promptctl [--server URL] [--token T] [--output table|json] COMMAND [ARGS]
//
// Exit status: 0 done; 1 failed; 2 usage; 3 conflict (someone else changed
// what you based your change on: re-read, rebase, retry).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/promptd/promptd/api/client"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit statuses.
const (
	exitOK       = 0
	exitFailed   = 1
	exitUsage    = 2
	exitConflict = 3
)

// app is one invocation: the global options and the streams.
type app struct {
	ctx            context.Context
	stdout, stderr io.Writer
	getenv         func(string) string
	server, token  string
	output         string
	traceparent    string // W3C trace context the requests continue
	c              *client.Client
}

// command is a subcommand: its one-line usage and what it runs.
type command struct {
	usage string
	run   func(a *app, args []string) error
}

var commands = map[string]command{
	"apply":     {"apply -f DIR|FILE [--atomic] [--env ENV] [--message M] [--dry-run]", runApply},
	"agents":    {"agents", runAgents},
	"versions":  {"versions AGENT", runVersions},
	"get":       {"get AGENT VERSION", runGet},
	"diff":      {"diff AGENT A B", runDiff},
	"envs":      {"envs AGENT [ENV]", runEnvs},
	"rollback":  {"rollback AGENT ENV [--to V] [--reason R]", runRollback},
	"release":   {releaseUsage, runRelease},
	"sessions":  {"sessions get ID", runSessions},
	"events":    {eventsUsage, runEvents},
	"audit":     {"audit [--agent A] [--env E] [--session S] [--action X] [--since ID] [--limit N]", runAudit},
	"tokens":    {tokensUsage, runTokens},
	"approvals": {approvalsUsage, runApprovals},
}

// run is promptctl: args without the program name; the exit status.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	a := &app{ctx: ctx, stdout: stdout, stderr: stderr, getenv: getenv}
	fs := a.flags("promptctl")
	fs.Usage = func() { usage(stderr) }
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return exitOK
	} else if err != nil {
		return exitUsage
	}
	rest := fs.Args()
	if len(rest) == 0 || rest[0] == "help" {
		usage(stderr)
		return exitUsage
	}
	cmd, ok := commands[rest[0]]
	if !ok {
		fmt.Fprintf(stderr, "promptctl: unknown command %q\n\n", rest[0])
		usage(stderr)
		return exitUsage
	}
	err := cmd.run(a, rest[1:])
	return a.exit(err, cmd)
}

// flags is a flag set with the global options, which every subcommand
// also accepts (promptctl apply -f dir --output json).
func (a *app) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(a.stderr)
	fs.Var(quiet{&a.server}, "server", "promptd `URL` (default $PROMPTD_URL, else http://127.0.0.1:8080)")
	fs.Var(quiet{&a.token}, "token", "bearer `TOKEN` (default $PROMPTD_TOKEN)")
	fs.StringVar(&a.output, "output", orDefault(a.output, "table"), "output format: table or json")
	fs.StringVar(&a.traceparent, "traceparent", a.traceparent, "W3C `traceparent` the requests continue (default $TRACEPARENT)")
	return fs
}

// parse parses a subcommand's flags, which may come before, between or
// after its positional arguments; it checks the positional count.
func (a *app) parse(fs *flag.FlagSet, args []string, minPos, maxPos int) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
			return nil, errHelp
		} else if err != nil {
			return nil, usageError{err.Error()}
		}
		if args = fs.Args(); len(args) == 0 {
			break
		}
		pos, args = append(pos, args[0]), args[1:]
	}
	if a.output != "table" && a.output != "json" {
		return nil, usageError{"--output must be table or json"}
	}
	if len(pos) < minPos || len(pos) > maxPos {
		return nil, usageError{"wrong number of arguments"}
	}
	if a.server == "" {
		a.server = orDefault(a.getenv("PROMPTD_URL"), "http://127.0.0.1:8080")
	}
	if a.token == "" {
		a.token = a.getenv("PROMPTD_TOKEN")
	}
	if a.token == "" {
		return nil, usageError{"no token: set PROMPTD_TOKEN or pass --token (embedded promptd writes them to ./data/tokens)"}
	}
	if err := a.continueTrace(); err != nil {
		return nil, err
	}
	a.c = client.New(a.server, a.token, client.WithUserAgent("promptctl/1"))
	return pos, nil
}

// quiet is a string flag whose value never shows in -h (a token).
type quiet struct{ p *string }

func (q quiet) String() string     { return "" }
func (q quiet) Set(v string) error { *q.p = v; return nil }

// errHelp: -h was asked for and answered.
var errHelp = errors.New("help")

// usageError is wrong usage: exit status 2 with the command's usage.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// conflictError is a conflict already reported in full: exit status 3.
type conflictError struct{ msg string }

func (e conflictError) Error() string { return e.msg }

// exit reports err and returns the exit status.
func (a *app) exit(err error, cmd command) int {
	var ue usageError
	var ce conflictError
	var pe *client.Error
	switch {
	case err == nil, errors.Is(err, errHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(a.stderr, "promptctl: %s\nusage: promptctl %s\n", ue.msg, cmd.usage)
		return exitUsage
	case errors.As(err, &ce):
		fmt.Fprintf(a.stderr, "promptctl: %s\n", ce.msg)
		return exitConflict
	case errors.As(err, &pe):
		fmt.Fprintf(a.stderr, "promptctl: %s\n", describe(pe))
		if isConflict(pe) {
			return exitConflict
		}
		return exitFailed
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(a.stderr, "promptctl: interrupted")
		return exitFailed
	case errors.As(err, new(*url.Error)):
		fmt.Fprintf(a.stderr, "promptctl: cannot reach promptd at %s: %v\n  is it running? (--server or PROMPTD_URL)\n", a.server, err)
		return exitFailed
	}
	fmt.Fprintf(a.stderr, "promptctl: %v\n", err)
	return exitFailed
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: promptctl [--server URL] [--token T] [--output table|json] [--traceparent TRACEPARENT] COMMAND [ARGS]")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %s\n", commands[n].usage)
	}
	fmt.Fprintln(w, "\nenvironment: PROMPTD_URL, PROMPTD_TOKEN, TRACEPARENT")
	fmt.Fprintln(w, "exit status: 0 done, 1 failed, 2 usage, 3 conflict (re-read, rebase, retry)")
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// continueTrace puts the --traceparent (or $TRACEPARENT) in a.ctx as the
// remote parent of every request, so promptd's spans join the caller's
// trace.
func (a *app) continueTrace() error {
	tp := orDefault(a.traceparent, a.getenv("TRACEPARENT"))
	if tp == "" {
		return nil
	}
	ctx := propagation.TraceContext{}.Extract(a.ctx, propagation.MapCarrier{"traceparent": tp})
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return usageError{"--traceparent: not a W3C traceparent (00-<32 hex trace id>-<16 hex span id>-<2 hex flags>)"}
	}
	a.ctx = ctx
	return nil
}
