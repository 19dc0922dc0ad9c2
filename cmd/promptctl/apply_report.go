package main

import (
	"fmt"
	"path/filepath"
	"strings"
)

// report prints apply's plan and outcome: a table (one row per agent,
// then the env switches, then each conflict with its diff), or JSON.
func (a *app) report(items []*planItem, fp *fragPlan, o applyOpts, dir string) {
	if a.output == "json" {
		rep := map[string]any{"dry_run": o.dryRun, "atomic": o.atomic, "lock_file": filepath.Join(dir, lockName),
			"items": items, "summary": summary(items)}
		if fp != nil && len(fp.items) > 0 {
			rep["fragments"] = fp.items
		}
		_ = a.printJSON(rep)
		return
	}
	a.reportFragments(fp)
	rows := make([][]string, len(items))
	for i, it := range items {
		version := "-"
		switch it.Status {
		case stCreated, stUnchanged:
			version = itoa(it.Version)
		case stCreate:
			version = itoa(it.Base+1) + " (planned)"
			if it.Merge != nil { // a rebase: over the latest
				version = itoa(it.Version) + " (planned merge)"
			}
		case stConflict:
			version = "latest is " + itoa(it.Latest)
		}
		rows[i] = []string{it.Agent, it.File, it.Status, itoa(it.Base), version, short(it.ContentHash)}
	}
	a.table([]string{"AGENT", "FILE", "STATUS", "BASE", "VERSION", "HASH"}, rows)
	var sws [][]string
	for _, it := range items {
		if sw := it.Env; sw != nil {
			sws = append(sws, []string{it.Agent, sw.Env, itoa(sw.From), itoa(sw.To), itoa(sw.Revision), sw.Result})
		}
	}
	if len(sws) > 0 {
		fmt.Fprintln(a.stdout)
		a.table([]string{"AGENT", "ENV", "FROM", "TO", "REVISION", "RESULT"}, sws)
	}
	for _, it := range items {
		if it.Detail != "" {
			fmt.Fprintf(a.stdout, "\n%s %s: %s\n", it.Status, it.Agent, it.Detail)
		}
		if it.Diff != "" {
			fmt.Fprint(a.stdout, indent(it.Diff))
		}
		if it.Env != nil && it.Env.Detail != "" {
			fmt.Fprintf(a.stdout, "\nenv %s of %s: %s\n", it.Env.Env, it.Agent, it.Env.Detail)
		}
	}
	s := summary(items)
	fmt.Fprintf(a.stdout, "\n%d created, %d unchanged, %d conflict, %d invalid or failed", s[stCreated], s[stUnchanged], s[stConflict], s[stInvalid]+s[stFailed])
	if o.dryRun {
		fmt.Fprintf(a.stdout, " (dry run: %d to create, nothing changed)", s[stCreate])
	}
	fmt.Fprintln(a.stdout)
}

func summary(items []*planItem) map[string]int {
	s := map[string]int{}
	for _, it := range items {
		s[it.Status]++
	}
	return s
}

func indent(text string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		if line != "" {
			b.WriteString("    " + line)
		}
	}
	if !strings.HasSuffix(b.String(), "\n") {
		b.WriteString("\n")
	}
	return b.String()
}
