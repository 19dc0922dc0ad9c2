package client_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// Every problem code of the server's status table (api/errors.go, which
// a server test checks against api/openapi.yaml's Problem codes) has its
// Code constant here, as both SDKs' tests check theirs: a code added to
// the server without one fails this test.
func TestCodes_everyCodeOfTheServer_hasAConstant(t *testing.T) {
	table, err := os.ReadFile(filepath.Join("..", "errors.go"))
	if err != nil {
		t.Fatal(err)
	}
	server := regexp.MustCompile(`(?m)^\s*"([a-z_]+)":\s*\d{3},`).FindAllStringSubmatch(string(table), -1)
	if len(server) < 30 {
		t.Fatalf("only %d codes read from api/errors.go", len(server))
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
	for _, m := range server {
		if !slices.Contains(mine, m[1]) {
			missing = append(missing, m[1])
		}
	}
	if len(missing) > 0 {
		t.Fatalf("codes of the server with no client.Code constant: %v", missing)
	}
}
