//go:build !linux

package testenv

import "syscall"

// procAttr: outside Linux there is no parent-death signal; a child server
// outlives a test binary that dies without running its cleanups.
func procAttr() *syscall.SysProcAttr { return nil }
