package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// defaultAddr is PROMPTD_ADDR's default.
const defaultAddr = "127.0.0.1:8080"

// usageError is a command line promptd does not take: exit status 2, as
// for every command-line tool.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// exitCode is 2 for usage errors, 1 for everything else.
func exitCode(err error) int {
	if ue := (*usageError)(nil); errors.As(err, &ue) {
		return 2
	}
	return 1
}

// versionLine is what `promptd --version` prints: the module version, the
// commit it was built from when known, and the Go release.
func versionLine() string {
	line := "promptd " + buildVersion()
	if rev := buildRevision(); rev != "" {
		line += " (" + rev + ")"
	}
	return line + " " + runtime.Version()
}

// buildRevision is the VCS commit the binary was built from ("" when
// the build did not record one), with "+dirty" for a modified tree.
func buildRevision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		return ""
	}
	return rev + dirty
}

// buildInfo is the promptd_build_info gauge: always 1, labelled with
// what --version prints, so dashboards can tell which build each
// instance runs.
func buildInfo() prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "promptd_build_info",
		Help: "Always 1; the labels name the build: version, VCS revision, Go release."},
		[]string{"version", "revision", "goversion"})
	g.WithLabelValues(buildVersion(), buildRevision(), runtime.Version()).Set(1)
	return g
}

// healthcheck probes a running promptd for container health checks (the
// image has no shell or curl): GET /healthz (or /readyz with --ready) on
// --url, by default the address PROMPTD_ADDR names (a wildcard host is
// probed on loopback). Exit 0 on 200; otherwise the cause on stderr and
// exit 1.
func healthcheck(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("promptd healthcheck", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	base := fs.String("url", "", "base URL of promptd (default: http://<PROMPTD_ADDR>)")
	ready := fs.Bool("ready", false, "probe /readyz (can serve) instead of /healthz (is up)")
	timeout := fs.Duration("timeout", 3*time.Second, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return usageErrorf("healthcheck: %v (usage: promptd healthcheck [--ready] [--url URL] [--timeout 3s])", err)
	}
	if fs.NArg() > 0 {
		return usageErrorf("healthcheck: unexpected argument %q", fs.Arg(0))
	}
	if *base == "" {
		u, err := probeURL(getenv("PROMPTD_ADDR"))
		if err != nil {
			return usageErrorf("healthcheck: %v", err)
		}
		*base = u
	}
	path := "/healthz"
	if *ready {
		path = "/readyz"
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(*base, "/")+path, nil)
	if err != nil {
		return usageErrorf("healthcheck: --url: %v", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %s: %s", path, resp.Status, strings.TrimSpace(string(body)))
	}
	fmt.Fprintf(stdout, "%s ok\n", path)
	return nil
}

// probeURL turns a listen address into the URL a probe on the same host
// uses: an empty or wildcard host is loopback.
func probeURL(addr string) (string, error) {
	if addr == "" {
		addr = defaultAddr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("PROMPTD_ADDR %q: %v", addr, err)
	}
	if port == "0" {
		return "", fmt.Errorf("PROMPTD_ADDR %q picks a port at start: pass --url", addr)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}
