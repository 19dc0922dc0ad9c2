// Command gen writes testdata/conformance/vectors.json from
// internal/harness/conformance's cases, answered by package bundle. Run it from
// the repository's root: go run ./internal/harness/conformance/gen
package main

import (
	"fmt"
	"os"

	"github.com/promptd/promptd/internal/harness/conformance"
)

func main() {
	b, err := conformance.Generate()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile("testdata/conformance/vectors.json", b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
