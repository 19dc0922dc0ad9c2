//go:build !unix

package main

// openFileLimit is unknown on this system: the cap is taken as configured.
func openFileLimit() (uint64, bool) { return 0, false }
