package main

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuMeter reads the CPU time used so far by this process (the load
// generator, and the reference servers that live in it) and by the
// servers it drives in other processes: promptd, and the bare Echo
// process of the resolve scenario (process_cpu_seconds_total on their
// /metrics). Per operation, the sum is steadier than a rate on a shared
// machine: other work slows everything but hardly changes what one
// request costs. It leaves out MariaDB and Redis.
type cpuMeter struct {
	metricsURLs []string // promptd's first
	token       string   // promptd's metrics token
}

// meter is the run's cpuMeter (run sets it).
var meter cpuMeter

// read returns this process's CPU time and the servers'; ok is false when
// a server's could not be read.
func (m cpuMeter) read(ctx context.Context) (self, servers time.Duration, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	ok = len(m.metricsURLs) > 0
	for i, u := range m.metricsURLs {
		token := ""
		if i == 0 {
			token = m.token
		}
		cpu, read := serverCPU(ctx, u, token)
		servers += cpu
		ok = ok && read
	}
	return self, servers, ok
}

func serverCPU(ctx context.Context, url, token string) (time.Duration, bool) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return 0, false
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := httpClient.Do(req)
	if err != nil {
		return 0, false
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, found := strings.CutPrefix(sc.Text(), "process_cpu_seconds_total "); found {
			s, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return time.Duration(s * float64(time.Second)), err == nil && res.StatusCode == 200
		}
	}
	return 0, false
}
