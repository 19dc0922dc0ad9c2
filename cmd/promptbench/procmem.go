package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// procMem is what /proc/PID/status says of a process's resident memory,
// in bytes: VmRSS now, VmHWM the most it has held since it started or
// since its high-water mark was last reset (resetHWM).
type procMem struct {
	RSS, HWM int64
}

// parseProcStatus reads VmRSS and VmHWM from the text of /proc/PID/status
// ("VmHWM:\t  123456 kB"). Either missing is an error: a kernel without
// them, or a file that is not a status file.
func parseProcStatus(r io.Reader) (procMem, error) {
	var m procMem
	var haveRSS, haveHWM bool
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		f := strings.Fields(val)
		if len(f) != 2 || f[1] != "kB" {
			return procMem{}, fmt.Errorf("%s: want <n> kB, got %q", key, strings.TrimSpace(val))
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb < 0 {
			return procMem{}, fmt.Errorf("%s: %q is not a size", key, f[0])
		}
		if key == "VmRSS" {
			m.RSS, haveRSS = kb<<10, true
		} else {
			m.HWM, haveHWM = kb<<10, true
		}
	}
	if err := sc.Err(); err != nil {
		return procMem{}, err
	}
	if !haveRSS || !haveHWM {
		return procMem{}, fmt.Errorf("no VmRSS and VmHWM lines")
	}
	return m, nil
}

// readProcMem reads pid's procMem.
func readProcMem(pid int) (procMem, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procMem{}, err
	}
	defer f.Close()
	return parseProcStatus(f)
}

// resetHWM sets pid's VmHWM back to its VmRSS (writing 5 to clear_refs),
// so that the next reading is the peak of what happened in between.
func resetHWM(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// mib is n bytes in MiB, for the tables.
func mib(n int64) float64 { return float64(n) / (1 << 20) }
