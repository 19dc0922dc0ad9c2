// Package buildinfo names the version a binary was built at, for the
// binaries' --version and promptd's build metric and spans.
package buildinfo

import "runtime/debug"

// Version is linked when set (a release build's -ldflags "-X
// main.version=v1.2.3"), else the module version, else "devel".
func Version(linked string) string {
	if linked != "" {
		return linked
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}
