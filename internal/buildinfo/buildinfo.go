// Package buildinfo names the version a binary was built at, for the
// binaries' --version and promptd's build metric and spans.
//
// The version is the repository's VERSION file (a copy of it is embedded
// here; a test keeps the two equal), with the commit the binary was built
// from when the Go toolchain recorded it ("0.1.0+3f2a9c1", "+dirty" for a
// tree with uncommitted changes). A release build links its own with
// -ldflags "-X main.version=0.1.0".
package buildinfo

import (
	_ "embed"
	"runtime/debug"
	"strings"
)

//go:embed VERSION
var versionFile string

// Release is the version of the VERSION file.
func Release() string { return strings.TrimSpace(versionFile) }

// Version is linked when set, else Release with the build's commit when
// the toolchain recorded one.
func Version(linked string) string {
	if linked != "" {
		return linked
	}
	v := Release()
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	var rev string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(rev) > 7 {
		rev = rev[:7]
	}
	switch {
	case rev != "" && dirty:
		return v + "+" + rev + ".dirty"
	case rev != "":
		return v + "+" + rev
	}
	return v
}
