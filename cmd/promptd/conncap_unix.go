//go:build unix

package main

import "syscall"

// openFileLimit is the soft RLIMIT_NOFILE.
func openFileLimit() (uint64, bool) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil || l.Cur >= 1<<40 { // unlimited, in effect
		return 0, false
	}
	return uint64(l.Cur), true
}
