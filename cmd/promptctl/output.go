package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/promptd/promptd/api/client"
)

// printJSON writes v as indented JSON (no HTML escaping).
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes rows under a header, aligned.
func (a *app) table(header []string, rows [][]string) {
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	_ = tw.Flush()
}

// show writes v as JSON, or as the table rows gives.
func (a *app) show(v any, header []string, rows func() [][]string) error {
	if a.output == "json" {
		return a.printJSON(v)
	}
	a.table(header, rows())
	return nil
}

func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func short(hash string) string {
	h := strings.TrimPrefix(hash, "sha256:")
	if len(h) > 12 {
		h = h[:12]
	}
	return h
}

func itoa[T ~int | ~int64](n T) string { return fmt.Sprint(n) }

// isConflict reports problems that mean someone else changed what the
// caller based its request on (exit status 3).
func isConflict(e *client.Error) bool {
	switch e.Code {
	case client.ErrVersionConflict, client.ErrRevisionConflict, client.ErrPreconditionFailed, client.ErrReleaseActive,
		client.ErrImportRejected, client.ErrStaleFence, client.ErrLeaseHeld, client.ErrLeaseLost, client.ErrInvalidTransition:
		return true
	}
	return false
}

// describe is the message of a problem: what promptd said, and what to do.
func describe(e *client.Error) string {
	msg := fmt.Sprintf("%s (%d %s)", orDefault(e.Detail, e.Title), e.Status, e.Code)
	hint := ""
	switch e.Code {
	case client.ErrUnauthorized:
		hint = "check --token or PROMPTD_TOKEN (an embedded promptd writes its tokens to ./data/tokens)"
	case client.ErrForbidden:
		hint = "this needs an admin token"
	case client.ErrVersionConflict:
		hint = fmt.Sprintf("someone published version %d meanwhile: re-read it (promptctl get AGENT %d), rebase your change on it, and apply again", e.LatestVersion(), e.LatestVersion())
	case client.ErrRevisionConflict, client.ErrPreconditionFailed:
		hint = fmt.Sprintf("it changed meanwhile (current revision %d): re-read it and retry", e.CurrentRevision())
	case client.ErrReleaseActive:
		hint = fmt.Sprintf("release %s is active in this env: the pointer moves only through it (promptctl release status|promote|rollback %s)", e.ReleaseID(), e.ReleaseID())
	case client.ErrInvalidTransition:
		hint = fmt.Sprintf("the release is %s; see promptctl release status", e.State())
	case client.ErrNoPointer:
		hint = "the env has no pointer yet: promptctl apply -f DIR --env ENV sets it"
	case client.ErrVersionRevoked:
		hint = "the version is revoked in this env; pick another, or lift the revocation first"
	case client.ErrUndeclaredVariable, client.ErrMissingVariable, client.ErrInvalidVariable:
		hint = fmt.Sprintf("variable %q: declare it under config.variables (with a default, or required)", e.Variable())
		if f := e.Field(); f != "" {
			hint = fmt.Sprintf("variable %q in field %s: declare it under config.variables (with a default, or required)", e.Variable(), f)
		}
	case client.ErrInvalidConfig, client.ErrInvalidField, client.ErrInvalidPercent, client.ErrInvalidSteps:
		if f := e.Field(); f != "" {
			hint = "field " + f
		}
	case client.ErrStoreUnavailable:
		hint = "promptd's database is unavailable; nothing was changed; retry later"
	}
	if hint != "" {
		msg += "\n  " + hint
	}
	return msg
}
