package check

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// composeService is what composeProblems reads of a compose service.
type composeService struct {
	Image       string            `json:"image"`
	Profiles    []string          `json:"profiles"`
	Environment map[string]string `json:"environment"`
	EnvFile     []struct {
		Path     string `json:"path"`
		Required *bool  `json:"required"`
	} `json:"env_file"`
	Ports       []any `json:"ports"`
	Healthcheck struct {
		Test []string `json:"test"`
	} `json:"healthcheck"`
	ReadOnly bool     `json:"read_only"`
	Volumes  []string `json:"volumes"`
}

// secretVars may be set only through an env file.
var secretVars = []string{
	"PROMPTD_MYSQL_DSN", "PROMPTD_TOKENS", "PROMPTD_SECRET_KEY", "PROMPTD_METRICS_TOKEN", "PROMPTD_ETCD_PASSWORD",
	"MYSQL_ROOT_PASSWORD", "MYSQL_PASSWORD",
}

// replicas are the promptd services of the `ha` profile, as HAProxy names
// their hosts.
var replicas = []string{"promptd", "promptd-2", "promptd-3"}

// composeProblems says what of compose file data breaks the deployment's
// rules: secrets inline, a port on every address, a promptd service not
// reading its env file or not probed by healthcheck --ready, the `ha`
// profile without its three replicas and balancer.
func composeProblems(data []byte) ([]string, error) {
	var f struct {
		Services map[string]composeService `json:"services"`
	}
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	var out []string
	bad := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	names := make([]string, 0, len(f.Services))
	for n := range f.Services {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		s := f.Services[name]
		for _, k := range secretVars {
			if _, ok := s.Environment[k]; ok {
				bad("%s: %s inline in environment (secrets go in the env file)", name, k)
			}
		}
		for _, p := range s.Ports {
			switch p := p.(type) {
			case string:
				if !strings.HasPrefix(p, "127.0.0.1:") {
					bad("%s: port %q is published on every address", name, p)
				}
			case map[string]any:
				if p["host_ip"] != "127.0.0.1" {
					bad("%s: port %v is published on every address", name, p)
				}
			}
		}
	}
	for _, name := range replicas {
		s, ok := f.Services[name]
		if !ok {
			bad("service %s missing", name)
			continue
		}
		if name != "promptd" && !slices.Equal(s.Profiles, []string{"ha"}) {
			bad("%s: profiles %v, want [ha]", name, s.Profiles)
		}
		if len(s.EnvFile) != 1 || s.EnvFile[0].Path != "deploy/compose/promptd.env" || s.EnvFile[0].Required == nil || !*s.EnvFile[0].Required {
			bad("%s: env_file %+v, want deploy/compose/promptd.env, required", name, s.EnvFile)
		}
		if got := strings.Join(s.Healthcheck.Test, " "); got != "CMD /usr/local/bin/promptd healthcheck --ready" {
			bad("%s: healthcheck %q, want promptd healthcheck --ready", name, got)
		}
		if !s.ReadOnly {
			bad("%s: root file system writable", name)
		}
	}
	if m, ok := f.Services["mysql"]; !ok || len(m.EnvFile) != 1 || m.EnvFile[0].Path != "deploy/compose/mysql.env" {
		bad("mysql: env_file %+v, want deploy/compose/mysql.env", m.EnvFile)
	}
	lb, ok := f.Services["lb"]
	switch {
	case !ok:
		bad("service lb missing")
	case !slices.Equal(lb.Profiles, []string{"ha"}):
		bad("lb: profiles %v, want [ha]", lb.Profiles)
	case !slices.Contains(lb.Volumes, "./deploy/compose/haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro"):
		bad("lb: does not mount deploy/compose/haproxy.cfg: %v", lb.Volumes)
	}
	return out, nil
}

// haproxyProblems says what of haproxy.cfg data fails to balance over
// the replicas by /readyz.
func haproxyProblems(cfg string) []string {
	var out []string
	lines := map[string]bool{}
	for _, l := range strings.Split(cfg, "\n") {
		lines[strings.Join(strings.Fields(l), " ")] = true
	}
	for _, want := range []string{"option httpchk", "http-check send meth GET uri /readyz", "http-check expect status 200"} {
		if !lines[want] {
			out = append(out, fmt.Sprintf("no %q", want))
		}
	}
	var check bool
	for l := range lines {
		check = check || strings.HasPrefix(l, "default-server ") && slices.Contains(strings.Fields(l), "check")
	}
	if !check {
		out = append(out, "servers are not checked (default-server ... check)")
	}
	for i, r := range replicas {
		if want := fmt.Sprintf("server promptd-%d %s:8080", i+1, r); !lines[want] {
			out = append(out, fmt.Sprintf("no %q", want))
		}
	}
	return out
}

// envFile reads KEY=value lines (comments and blank lines skipped).
func envFile(data []byte) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if k, v, ok := strings.Cut(l, "="); ok {
			out[k] = v
		}
	}
	return out
}
