package client_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// Every problem code of the server's table (problem/codes.json, which
// server tests check against problem.Codes and api/openapi.yaml's Problem
// codes) has its Code constant here, as both SDKs' tests check theirs: a
// code added to the server without one fails this test.
func TestCodes_everyCodeOfTheServer_hasAConstant(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "problem", "codes.json"))
	if err != nil {
		t.Fatal(err)
	}
	var table struct{ Codes []struct{ Code string } }
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	if len(table.Codes) < 30 {
		t.Fatalf("only %d codes read from problem/codes.json", len(table.Codes))
	}
	files, _ := filepath.Glob("*.go")
	var mine []string
	constant := regexp.MustCompile(`(?m)^\s*Err\w+\s+Code\s*=\s*"([a-z_]+)"`)
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range constant.FindAllStringSubmatch(string(src), -1) {
			mine = append(mine, m[1])
		}
	}
	var missing []string
	for _, c := range table.Codes {
		if !slices.Contains(mine, c.Code) {
			missing = append(missing, c.Code)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("codes of the server with no client.Code constant: %v", missing)
	}
}
