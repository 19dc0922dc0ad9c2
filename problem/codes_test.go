package problem_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/promptd/promptd/problem"
)

var update = flag.Bool("update", false, "rewrite codes.json from problem.Codes")

// codes.json is problem.Codes as a file (code and status, sorted by
// code): what the Go client's, the Python SDK's and the TypeScript SDK's
// tests read. `go test ./problem -run TestCodesFile -update` rewrites it.
func TestCodesFile_isTheTable(t *testing.T) {
	type entry struct {
		Code   string `json:"code"`
		Status int    `json:"status"`
	}
	var want struct {
		Codes []entry `json:"codes"`
	}
	for _, c := range problem.Sorted() {
		want.Codes = append(want.Codes, entry{c, problem.Codes[c]})
	}
	b, err := json.MarshalIndent(want, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	if *update {
		if err := os.WriteFile("codes.json", b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("codes.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, b) {
		t.Fatalf("codes.json is not problem.Codes; rewrite it: go test ./problem -run TestCodesFile -update")
	}
}

// Every code has a status a client can act on, and none is a 2xx or 3xx.
func TestCodes_haveProblemStatuses(t *testing.T) {
	for c, s := range problem.Codes {
		if s < 400 || s > 599 {
			t.Errorf("%s: status %d", c, s)
		}
	}
	if len(problem.Codes) < 60 {
		t.Errorf("only %d codes", len(problem.Codes))
	}
}
