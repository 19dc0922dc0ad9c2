package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"syscall"
	"time"

	"github.com/promptd/promptd/internal/slowloris"
)

// runSlowloris is `promptbench slowloris`: it opens -conns slow or idle
// connections to promptd (in turn: no bytes, unfinished headers, headers
// without their body, headers and one body byte), probes /healthz with a
// new connection every -probe-every while they are open, and reports the
// slowest probe, promptd's RSS (with -pid) and how long the server took
// to close each kind. It fails when a probe took over -max-probe or the
// server left connections open.
func runSlowloris(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("promptbench slowloris", flag.ContinueOnError)
	base := fs.String("url", "http://127.0.0.1:8080", "promptd base URL")
	var o slowloris.Options
	fs.IntVar(&o.Conns, "conns", 20000, "slow connections to open (raise ulimit -n above it)")
	fs.StringVar(&o.Path, "path", "/v1/sessions", "target of the slow requests")
	fs.DurationVar(&o.ProbeEvery, "probe-every", 100*time.Millisecond, "interval of the /healthz probes")
	fs.DurationVar(&o.Wait, "wait", 2*time.Minute, "how long to wait for the server to close them, once all are open")
	fs.IntVar(&o.PID, "pid", 0, "promptd's process id, to sample its VmRSS (0: not sampled)")
	fs.IntVar(&o.Dialers, "dialers", 256, "connections being opened at once")
	fs.IntVar(&o.Rate, "rate", 0, "open at most this many connections per second (0: as fast as the dialers go)")
	maxProbe := fs.Duration("max-probe", time.Second, "fail when a /healthz probe took longer")
	if err := fs.Parse(args); err != nil {
		return err
	}
	u, err := url.Parse(*base)
	if err != nil || u.Host == "" || u.Scheme != "http" {
		return fmt.Errorf("-url %q: want http://host:port", *base)
	}
	o.Addr = u.Host
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < uint64(o.Conns)+64 {
		return fmt.Errorf("-conns %d needs more open files than this process may have (%d): raise ulimit -n, "+
			"or run several promptbench slowloris processes side by side", o.Conns, lim.Cur)
	}
	r, err := slowloris.Run(ctx, o)
	fmt.Fprint(out, r)
	switch {
	case err != nil:
		return err
	case r.ProbeErrors > 0 || r.ProbeMax > *maxProbe:
		return fmt.Errorf("/healthz: %d of %d probes failed, slowest %s (limit %s)", r.ProbeErrors, r.Probes, r.ProbeMax, *maxProbe)
	case !r.Closed():
		return fmt.Errorf("the server left %d connections open after %s", r.StillOpen, o.Wait)
	}
	return nil
}
