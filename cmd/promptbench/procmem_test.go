package main

import (
	"os"
	"runtime/debug"
	"strings"
	"testing"
)

func TestParseProcStatus_readsRSSAndHWMInBytes(t *testing.T) {
	status := "Name:\tpromptd\nVmPeak:\t 2000000 kB\nVmHWM:\t   81920 kB\nVmRSS:\t   40960 kB\nThreads:\t9\n"
	m, err := parseProcStatus(strings.NewReader(status))
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS != 40<<20 || m.HWM != 80<<20 {
		t.Fatalf("got RSS %d HWM %d, want %d and %d", m.RSS, m.HWM, 40<<20, 80<<20)
	}
}

func TestParseProcStatus_withoutTheLines_fails(t *testing.T) {
	for _, status := range []string{"", "Name:\tx\nVmRSS:\t 1 kB\n", "VmRSS:\t 1 MB\nVmHWM:\t 1 kB\n", "VmRSS:\t -1 kB\nVmHWM:\t 1 kB\n"} {
		if _, err := parseProcStatus(strings.NewReader(status)); err == nil {
			t.Errorf("%q was accepted", status)
		}
	}
}

func TestResetHWM_afterAFreedPeak_lowersTheMark(t *testing.T) {
	if _, err := readProcMem(os.Getpid()); err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	touch(64 << 20)
	debug.FreeOSMemory()
	before, err := readProcMem(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if before.HWM < before.RSS+32<<20 {
		t.Skipf("the freed 64 MiB were not given back (RSS %d, HWM %d)", before.RSS, before.HWM)
	}
	if err := resetHWM(os.Getpid()); err != nil {
		t.Skipf("clear_refs: %v", err)
	}
	after, err := readProcMem(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after.HWM > before.HWM-32<<20 || after.HWM < after.RSS {
		t.Fatalf("HWM %d before the reset, %d after (RSS %d)", before.HWM, after.HWM, after.RSS)
	}
}

// touch allocates n bytes and writes every one, so that they are resident.
func touch(n int) {
	b := make([]byte, n)
	for i := range b {
		b[i] = 1
	}
}
