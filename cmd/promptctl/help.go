package main

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"

	"github.com/promptd/promptd/internal/buildinfo"
)

// version is set at build time (-ldflags "-X main.version=0.1.0");
// else the VERSION file's, with the commit built from (buildinfo.Version).
var version string

func buildVersion() string { return buildinfo.Version(version) }

// doc is the help of a command or subcommand: `promptctl help NAME` and
// `NAME --help` print it on stdout.
type doc struct {
	synopsis string   // after "usage: promptctl "; lines beyond the first are alternatives
	summary  string   // one line, for the command list
	text     string   // what it does
	examples []string // command lines, with a trailing "# comment" allowed
	subs     []string // subcommands, each with a doc of its own ("release start")
}

// globalFlags are the options every command takes.
var globalFlags = map[string]bool{"server": true, "token": true, "output": true, "traceparent": true}

// isHelp reports an argument that asks for help.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}

// help prints the help of name on stdout: synopsis, description, the
// command's own flags (fs, when it has a flag set), examples.
func (a *app) help(name string, fs *flag.FlagSet) {
	d, ok := docs[name]
	if !ok {
		d = docs[strings.Fields(name)[0]]
	}
	w := a.stdout
	fmt.Fprintf(w, "usage: %s\n", strings.ReplaceAll(d.synopsis, "\n", "\n       "))
	fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(d.text))
	if len(d.subs) > 0 {
		fmt.Fprintln(w, "\nsubcommands:")
		for _, s := range d.subs {
			fmt.Fprintf(w, "  %-20s %s\n", strings.TrimPrefix(s, name+" "), docs[s].summary)
		}
		fmt.Fprintf(w, "\nrun 'promptctl help %s SUBCOMMAND' for one of them.\n", name)
	}
	if fs != nil {
		own := flag.NewFlagSet(name, flag.ContinueOnError)
		fs.VisitAll(func(f *flag.Flag) {
			if !globalFlags[f.Name] {
				own.Var(f.Value, f.Name, f.Usage)
			}
		})
		if n := countFlags(own); n > 0 {
			fmt.Fprintln(w, "\nflags:")
			own.SetOutput(w)
			own.PrintDefaults()
		}
	}
	fmt.Fprintln(w, "\nglobal flags: --server URL, --token T, --output table|json, --traceparent TP (promptctl help)")
	if len(d.examples) > 0 {
		fmt.Fprintln(w, "\nexamples:")
		for _, e := range d.examples {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
}

func countFlags(fs *flag.FlagSet) int {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n
}

// synopsis is the first usage line of name.
func synopsis(name string) string {
	d, ok := docs[name]
	if !ok {
		d = docs[strings.Fields(name)[0]]
	}
	return d.synopsis
}

// runHelp: promptctl help [COMMAND [SUBCOMMAND]]: the command's own
// --help, so both print the same.
func runHelp(a *app, args []string) error {
	name := strings.Join(args, " ")
	_, known := docs[name]
	switch {
	case len(args) == 0:
		usage(a.stdout)
		return nil
	case len(args) == 1 && isHelp(args[0]): // help help, help --help
		a.help("help", nil)
		return nil
	case !known && commands[args[0]].run == nil:
		return usageError{fmt.Sprintf("no help for %q: not a command", name)}
	}
	return commands[args[0]].run(a, append(args[1:len(args):len(args)], "--help"))
}

// usage is the top-level help: every command with its summary.
func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: promptctl [--server URL] [--token T] [--output table|json] [--traceparent TRACEPARENT] COMMAND [ARGS]")
	fmt.Fprintln(w, "       promptctl help [COMMAND [SUBCOMMAND]]")
	fmt.Fprintln(w, "       promptctl --version")
	fmt.Fprintln(w, "\npromptd's admin CLI: prompts as code (apply, pull), versions, envs, releases,")
	fmt.Fprintln(w, "rollbacks, sessions, the audit log, tokens and approvals.")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, docs[n].summary)
	}
	fmt.Fprintln(w, "\nglobal flags (every command takes them, before or after its arguments):")
	fmt.Fprintln(w, "  --server URL                promptd (default $PROMPTD_URL, else http://127.0.0.1:8080)")
	fmt.Fprintln(w, "  --token T                   bearer token (default $PROMPTD_TOKEN)")
	fmt.Fprintln(w, "  --output table|json         output format (default table)")
	fmt.Fprintln(w, "  --traceparent TRACEPARENT   W3C trace context the requests continue (default $TRACEPARENT)")
	fmt.Fprintln(w, "\nenvironment: PROMPTD_URL, PROMPTD_TOKEN, TRACEPARENT")
	fmt.Fprintln(w, "exit status: 0 done, 1 failed, 2 usage, 3 conflict (re-read, rebase, retry)")
	fmt.Fprintln(w, "\nrun 'promptctl help COMMAND' for a command's flags and examples.")
}

func versionLine() string {
	return "promptctl " + buildVersion() + " " + runtime.Version()
}
