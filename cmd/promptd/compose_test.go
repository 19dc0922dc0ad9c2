package main

import (
	"context"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// loadCompose loads ../../docker-compose.yml as `docker compose` would,
// but without interpolation or the test's environment, so the file is
// checked exactly as written.
func loadCompose(t *testing.T) *types.Project {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("..", "..", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	opts, err := cli.NewProjectOptions([]string{path},
		cli.WithName("promptd"),
		cli.WithWorkingDirectory(filepath.Dir(path)),
		cli.WithInterpolation(false),
		cli.WithoutEnvironmentResolution,
	)
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	// The secrets come from env files the operator copies from committed
	// examples (the copies are not in git): resolve each service's
	// environment from the examples, as compose would from the copies.
	for name, s := range p.Services {
		for i := range s.EnvFiles {
			s.EnvFiles[i].Path += ".example"
		}
		p.Services[name] = s
	}
	if p, err = p.WithServicesEnvironmentResolved(false); err != nil {
		t.Fatalf("docker-compose.yml env_file: %v", err)
	}
	return p
}

func TestCompose_wiresPromptdToItsStores(t *testing.T) {
	p := loadCompose(t)
	for _, name := range []string{"mysql", "redis", "promptd"} {
		if _, ok := p.Services[name]; !ok {
			t.Fatalf("service %q missing; services: %v", name, p.ServiceNames())
		}
	}
	for _, store := range []string{"mysql", "redis"} {
		hc := p.Services[store].HealthCheck
		if hc == nil || hc.Disable || len(hc.Test) == 0 {
			t.Errorf("%s has no healthcheck", store)
		}
	}
	if cmd := strings.Join(p.Services["mysql"].Command, " "); !strings.Contains(cmd, "--innodb_flush_log_at_trx_commit=1") {
		t.Errorf("mysql command %q lacks --innodb_flush_log_at_trx_commit=1", cmd)
	}

	promptd := p.Services["promptd"]
	// the image has no shell: the probe is promptd's own subcommand, which
	// TestCommandLine_conventions runs
	if hc := promptd.HealthCheck; hc == nil || strings.Join(hc.Test, " ") != "CMD /usr/local/bin/promptd healthcheck --ready" {
		t.Errorf("promptd healthcheck = %+v, want promptd healthcheck --ready", hc)
	}
	if promptd.Build == nil || promptd.Build.Dockerfile != "Dockerfile" {
		t.Errorf("promptd is not built from Dockerfile: %+v", promptd.Build)
	}
	for _, store := range []string{"mysql", "redis"} {
		if dep, ok := promptd.DependsOn[store]; !ok || dep.Condition != types.ServiceConditionHealthy {
			t.Errorf("promptd depends_on %s = %+v, want condition service_healthy", store, dep)
		}
	}

	env := map[string]string{}
	for k, v := range promptd.Environment {
		if v == nil {
			t.Errorf("promptd environment %s has no value", k)
			continue
		}
		env[k] = *v
		if strings.HasPrefix(k, "PROMPTD_") && !slices.Contains(configVars, k) {
			t.Errorf("promptd environment sets %s, which promptd does not read", k)
		}
	}
	if dsn := env["PROMPTD_MYSQL_DSN"]; !strings.Contains(dsn, "tcp(mysql:3306)") {
		t.Errorf("PROMPTD_MYSQL_DSN = %q, want it to reach the mysql service", dsn)
	}
	if u, err := url.Parse(env["PROMPTD_REDIS_URL"]); err != nil || u.Hostname() != "redis" {
		t.Errorf("PROMPTD_REDIS_URL = %q, want host redis", env["PROMPTD_REDIS_URL"])
	}
	mysqlEnv := p.Services["mysql"].Environment
	if db := mysqlEnv["MYSQL_DATABASE"]; db == nil || !strings.Contains(env["PROMPTD_MYSQL_DSN"], ")/"+*db+"?") {
		t.Errorf("PROMPTD_MYSQL_DSN does not name MYSQL_DATABASE")
	}
	if pw := mysqlEnv["MYSQL_PASSWORD"]; pw == nil || !strings.Contains(env["PROMPTD_MYSQL_DSN"], ":"+*pw+"@") {
		t.Errorf("PROMPTD_MYSQL_DSN does not use MYSQL_PASSWORD")
	}
	if len(promptd.Ports) == 0 || promptd.Ports[0].Target != 8080 || promptd.Ports[0].Published != "8080" {
		t.Errorf("promptd ports = %+v, want 8080:8080", promptd.Ports)
	}

	if len(promptd.Ports) > 0 && promptd.Ports[0].HostIP != "127.0.0.1" {
		t.Errorf("promptd publishes 8080 on %q, want 127.0.0.1 (a TLS proxy in front, or a knowing change)", promptd.Ports[0].HostIP)
	}
	if env["PROMPTD_SECRET_KEY"] == "" {
		t.Errorf("PROMPTD_SECRET_KEY unset: webhooks are off with MySQL")
	}

	// The environment is a configuration promptd accepts.
	if _, err := loadConfig(func(k string) string { return env[k] }); err != nil {
		t.Errorf("promptd would refuse the compose environment: %v", err)
	}
}
