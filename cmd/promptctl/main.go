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
	name           string // the (sub)command running, for its usage line
	c              *client.Client
}

// command is a subcommand: what it runs (its help is docs[name]).
type command struct {
	run func(a *app, args []string) error
}

var commands = map[string]command{
	"apply":     {runApply},
	"pull":      {runPull},
	"agents":    {runAgents},
	"versions":  {runVersions},
	"get":       {runGet},
	"diff":      {runDiff},
	"envs":      {runEnvs},
	"rollback":  {runRollback},
	"release":   {runRelease},
	"sessions":  {runSessions},
	"events":    {runEvents},
	"audit":     {runAudit},
	"tokens":    {runTokens},
	"approvals": {runApprovals},
	"mcp":       {runMCP},
}

// run is promptctl: args without the program name; the exit status.
// Help and --version go to stdout (exit 0); usage errors to stderr
// (exit 2).
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	a := &app{ctx: ctx, stdout: stdout, stderr: stderr, getenv: getenv}
	fs := a.flags("promptctl")
	showVersion := fs.Bool("version", false, "print promptctl's version")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		usage(stdout)
		return exitOK
	} else if err != nil {
		fmt.Fprintf(stderr, "promptctl: %v\nrun 'promptctl help' for the commands and global flags\n", err)
		return exitUsage
	}
	rest := fs.Args()
	switch {
	case *showVersion:
		fmt.Fprintln(stdout, versionLine())
		return exitOK
	case len(rest) == 0:
		fmt.Fprintln(stderr, "promptctl: no command given\nusage: promptctl [--server URL] [--token T] [--output table|json] COMMAND [ARGS]\nrun 'promptctl help' for the commands")
		return exitUsage
	case rest[0] == "help":
		a.name = "help"
		return a.exit(runHelp(a, rest[1:]))
	}
	cmd, ok := commands[rest[0]]
	if !ok {
		fmt.Fprintf(stderr, "promptctl: unknown command %q\nrun 'promptctl help' for the commands\n", rest[0])
		return exitUsage
	}
	a.name = rest[0]
	return a.exit(cmd.run(a, rest[1:]))
}

// flags is a flag set with the global options, which every subcommand
// also accepts (promptctl apply -f dir --output json).
func (a *app) flags(name string) *flag.FlagSet {
	a.name = name
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by exit, help by a.help
	fs.Usage = func() {}
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
			a.help(fs.Name(), fs)
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
func (a *app) exit(err error) int {
	var ue usageError
	var ce conflictError
	var pe *client.Error
	switch {
	case err == nil, errors.Is(err, errHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(a.stderr, "promptctl: %s\nusage: %s\nrun 'promptctl help %s' for its flags and examples\n", ue.msg, synopsis(a.name), a.name)
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
