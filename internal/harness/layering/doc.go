// Package layering holds the module's import-layering test: the allowed
// arrows between packages (layers.go) and a test that reads the real
// import graph with `go list` and fails on an arrow that points up (or
// sideways, unless allowed), on a shipped package that imports the test
// harness, and on a package outside the transport that imports Echo.
//
// docs/architecture.md ("Packages and the layering rule") describes the
// layers; a new package needs its layer in layers.go, or the test fails
// until it has one.
package layering
