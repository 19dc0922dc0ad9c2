package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// configTable is every variable promptd reads, in the order it reads them,
// recorded by reading an empty environment (readConfig).
func configTable() []configVar {
	var rows []configVar
	_, _ = readConfig(&envReader{getenv: func(string) string { return "" }, docs: &rows})
	seen := map[string]bool{}
	out := rows[:0]
	for _, r := range rows {
		if !seen[r.Name] {
			seen[r.Name] = true
			out = append(out, r)
		}
	}
	return out
}

// configVars and configDocs index the table: the names, and each name's
// default and meaning.
var configVars, configDocs = indexConfig(configTable())

// configDoc is one variable's line of `promptd -h`.
type configDoc struct {
	Default, Meaning string
}

func indexConfig(rows []configVar) ([]string, map[string]configDoc) {
	names := make([]string, len(rows))
	docs := make(map[string]configDoc, len(rows))
	for i, r := range rows {
		names[i] = r.Name
		docs[r.Name] = configDoc{Default: r.Default, Meaning: r.Meaning}
	}
	return names, docs
}

// printUsage writes `promptd -h`: the commands, then every variable with
// its default and meaning.
func printUsage(w io.Writer) {
	fmt.Fprint(w, `usage: promptd                 serve (configured by the environment below)
       promptd healthcheck     probe a running promptd: exit 0 when /healthz answers 200
                               (--ready: /readyz; --url: base URL, default from PROMPTD_ADDR)
       promptd version         print the version (also --version)
       promptd help            this text (also -h, --help)

Environment (default; meaning). OpenTelemetry's standard OTEL_* variables
configure tracing (off when unset). docs/configuration.md explains each at length.

`)
	names := slices.Sorted(slices.Values(configVars))
	for _, name := range names {
		d := configDocs[name]
		fmt.Fprintf(w, "  %s (default: %s)\n      %s\n", name, d.Default, d.Meaning)
	}
}

// docDefault is a default cell of docs/configuration.md's table as
// `promptd -h` prints it.
func docDefault(cell string) string { return strings.ReplaceAll(cell, "`", "") }
