// Package check holds the tests of promptd's deployment files: the
// compose file and Dockerfile pin every image to an exact version, the
// Helm chart lints and renders into manifests that decode strictly into
// their Kubernetes types with the properties promptd's pods need, and the
// Prometheus alerts use only metrics promptd registers.
//
// It is a module of its own so the Helm and Kubernetes dependencies stay
// out of promptd's. Run it with scripts/deploy-check.sh, or
// `cd deploy/check && go test ./...`.
package check

import "path/filepath"

// repoRoot is the repository, from this package's directory.
var repoRoot = filepath.Join("..", "..")

// repoPath names a file of the repository.
func repoPath(elem ...string) string {
	return filepath.Join(append([]string{repoRoot}, elem...)...)
}
