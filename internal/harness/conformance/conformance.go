// Package conformance holds promptd's language-neutral conformance
// vectors (testdata/conformance/vectors.json): a bundle, a request and
// the answers the server gives. Cases builds them, Expect computes their
// answers with package bundle, and the tests check that the server and
// the Go evaluator give exactly those answers. `go run
// ./internal/harness/conformance/gen` rewrites the file.
package conformance

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"

	"github.com/promptd/promptd/bundle"
	"github.com/promptd/promptd/prompt"
)

// FormatVersion is the file's "format": bumped when its shape changes.
const FormatVersion = 1

// File is vectors.json.
type File struct {
	Format  int      `json:"format"`
	Vectors []Vector `json:"vectors"`
}

// Vector is one case.
type Vector struct {
	Name        string        `json:"name"`
	Description string        `json:"description,omitempty"`
	Bundle      bundle.Bundle `json:"bundle"`
	Request     Request       `json:"request"`
	Expect      Expect        `json:"expect"`
	// Setup is what the server test needs besides the bundle (the raw
	// override ids behind the bundle's hashes); evaluators ignore it.
	Setup *Setup `json:"setup,omitempty"`
}

// Setup: raw override ids, per agent and env; the fragments the bundle's
// configs pin, to publish before them (their versions in order, then
// their env pointers).
type Setup struct {
	Overrides map[string]map[string]OverrideIDs `json:"override_ids,omitempty"`
	Fragments []FragmentSetup                   `json:"fragments,omitempty"`
}

// FragmentSetup is one fragment: each version's create body (fragment,
// variables, fragments) and its env pointers.
type FragmentSetup struct {
	Name     string            `json:"name"`
	Versions []json.RawMessage `json:"versions"`
	Envs     map[string]int    `json:"envs,omitempty"`
}

// OverrideIDs are the raw ids a release was created with.
type OverrideIDs struct {
	Candidate []string `json:"candidate,omitempty"`
	Baseline  []string `json:"baseline,omitempty"`
}

// Request is the caller's request (bundle.Request on the wire).
type Request struct {
	Agent           string                     `json:"agent"`
	Env             string                     `json:"env"`
	UserID          string                     `json:"user_id,omitempty"`
	SessionID       string                     `json:"session_id,omitempty"`
	PinnedVersion   int                        `json:"pinned_version,omitempty"`
	Variables       map[string]json.RawMessage `json:"variables,omitempty"`
	History         []prompt.Message           `json:"history,omitempty"`
	MaxHistoryTurns int                        `json:"max_history_turns,omitempty"`
	Format          string                     `json:"format,omitempty"`
}

// Bundle is the request as package bundle takes it.
func (r Request) Bundle() bundle.Request {
	return bundle.Request{Agent: r.Agent, Env: r.Env, UserID: r.UserID, SessionID: r.SessionID, PinnedVersion: r.PinnedVersion,
		Variables: r.Variables, History: r.History, MaxHistoryTurns: r.MaxHistoryTurns, Format: r.Format}
}

// Expect holds the two answers: each the exact answer body (a JSON
// object), {"server": true, "reason"} or {"error": {...}}.
type Expect struct {
	Resolve   json.RawMessage `json:"resolve"`
	Assembled json.RawMessage `json:"assembled"`
}

// Problem is an expected error: code and status, and the field or
// variable the server names.
type Problem struct {
	Code     string `json:"code"`
	Status   int    `json:"status"`
	Field    string `json:"field,omitempty"`
	Variable string `json:"variable,omitempty"`
}

// Answers evaluates v's request on v's bundle with package bundle.
func Answers(v Vector) (Expect, error) {
	e, err := bundle.New(&v.Bundle)
	if err != nil {
		return Expect{}, err
	}
	var out Expect
	res, err := e.Resolve(v.Request.Bundle())
	if out.Resolve, err = answer(err, func() ([]byte, error) { return res.Body() }); err != nil {
		return Expect{}, err
	}
	body, _, err := e.Assemble(v.Request.Bundle())
	if out.Assembled, err = answer(err, func() ([]byte, error) { return body, nil }); err != nil {
		return Expect{}, err
	}
	return out, nil
}

func answer(err error, body func() ([]byte, error)) (json.RawMessage, error) {
	var be *bundle.Error
	var ask *bundle.AskServer
	switch {
	case errors.As(err, &ask):
		return json.Marshal(map[string]any{"server": true, "reason": ask.Reason})
	case errors.As(err, &be):
		return json.Marshal(map[string]Problem{"error": {Code: be.Code, Status: be.Status, Field: be.Field, Variable: be.Variable}})
	case err != nil:
		return nil, err
	}
	b, err := body()
	return bytes.TrimSuffix(b, []byte("\n")), err
}

// Load reads a vectors file.
func Load(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, err
	}
	return &f, nil
}

// Generate builds every case with its answers, as vectors.json holds
// them (2-space indented, a final newline).
func Generate() ([]byte, error) {
	f := File{Format: FormatVersion}
	for _, v := range Cases() {
		exp, err := Answers(v)
		if err != nil {
			return nil, errors.New(v.Name + ": " + err.Error())
		}
		v.Expect = exp
		f.Vectors = append(f.Vectors, v)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
