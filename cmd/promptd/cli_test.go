package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Every variable promptd reads has a line in `promptd -h`, and the
// configuration table of the docs (docs/configuration.md) names the same
// variables with the same defaults.
func TestConfigDocs_everyVariable_inHelpAndTheDocsTableWithTheSameDefault(t *testing.T) {
	readme, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `(PROMPTD_[A-Z_]+)`(?: / `(PROMPTD_[A-Z_]+)`)? \\| (.*?) \\|")
	inReadme := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(readme), -1) {
		for _, name := range []string{m[1], m[2]} {
			if name != "" {
				inReadme[name] = docDefault(m[3])
			}
		}
	}
	var help bytes.Buffer
	printUsage(&help)
	for _, name := range configVars {
		d, ok := configDocs[name]
		if !ok || d.Default == "" || d.Meaning == "" {
			t.Errorf("%s has no default and meaning in configDocs", name)
			continue
		}
		if !strings.Contains(help.String(), name+" (default: "+d.Default+")") {
			t.Errorf("promptd -h does not list %s with its default", name)
		}
		if got, ok := inReadme[name]; !ok {
			t.Errorf("docs/configuration.md's table has no row for %s", name)
		} else if got != d.Default {
			t.Errorf("%s: docs/configuration.md's default %q, promptd -h says %q", name, got, d.Default)
		}
	}
	for name := range configDocs {
		if !contains(configVars, name) {
			t.Errorf("configDocs documents %s, which promptd does not read", name)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// The command line follows the conventions: help and version on stdout
// with status 0; a usage error is status 2; a failed probe is status 1.
func TestCommandLine_conventions(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			http.Error(w, `{"sql":"down"}`, http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer up.Close()
	env := func(string) string { return "" }
	for _, c := range []struct {
		args   []string
		status int
		stdout string
	}{
		{[]string{"help"}, 0, "PROMPTD_ADDR (default: 127.0.0.1:8080)"},
		{[]string{"-h"}, 0, "promptd healthcheck"},
		{[]string{"--help"}, 0, "usage: promptd"},
		{[]string{"--version"}, 0, "promptd "},
		{[]string{"version"}, 0, "promptd "},
		{[]string{"serve-please"}, 2, ""},
		{[]string{"healthcheck", "--url", up.URL}, 0, "/healthz ok"},
		{[]string{"healthcheck", "--ready", "--url", up.URL}, 1, ""},
		{[]string{"healthcheck", "--url", "http://127.0.0.1:1"}, 1, ""},
		{[]string{"healthcheck", "--frobnicate"}, 2, ""},
		{[]string{"healthcheck", "extra"}, 2, ""},
	} {
		var out bytes.Buffer
		err := run(context.Background(), append([]string{"promptd"}, c.args...), env, &out)
		status := 0
		if err != nil {
			status = exitCode(err)
		}
		if status != c.status || !strings.Contains(out.String(), c.stdout) {
			t.Errorf("promptd %s: status %d (err %v), stdout %.80q; want status %d with %q", strings.Join(c.args, " "), status, err, out.String(), c.status, c.stdout)
		}
	}
}

func TestProbeURL_wildcardHostsAreProbedOnLoopback(t *testing.T) {
	for addr, want := range map[string]string{"": "http://127.0.0.1:8080", "0.0.0.0:9000": "http://127.0.0.1:9000",
		"[::]:9000": "http://127.0.0.1:9000", ":7000": "http://127.0.0.1:7000", "10.1.2.3:80": "http://10.1.2.3:80"} {
		if got, err := probeURL(addr); err != nil || got != want {
			t.Errorf("probeURL(%q) = %q, %v; want %q", addr, got, err, want)
		}
	}
	if _, err := probeURL("127.0.0.1:0"); err == nil {
		t.Error("a port picked at start cannot be probed without --url")
	}
}

func TestBuildInfo_isOneSeriesAtOne(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(buildInfo())
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 || mfs[0].GetName() != "promptd_build_info" || len(mfs[0].Metric) != 1 || mfs[0].Metric[0].GetGauge().GetValue() != 1 {
		t.Fatalf("gathered %v, %v", mfs, err)
	}
}
