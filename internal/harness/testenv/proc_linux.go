package testenv

import "syscall"

// procAttr makes the kernel kill a child server when the test binary dies
// without running its cleanups (a -timeout panic, a kill), so no
// redis-server outlives its test.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
