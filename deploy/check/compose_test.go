package check

import (
	"encoding/base64"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestCompose_keepsSecretsInEnvFilesAndBalancesThreeReplicas(t *testing.T) {
	problems, err := composeProblems(readFile(t, repoPath("docker-compose.yml")))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	for _, p := range haproxyProblems(string(readFile(t, repoPath("deploy", "compose", "haproxy.cfg")))) {
		t.Error("haproxy.cfg:", p)
	}
}

// The control: a compose file with inline secrets, a port on every
// address and no ha profile is refused for each.
func TestCompose_inlineSecretsFixture_isRefused(t *testing.T) {
	problems, err := composeProblems(readFile(t, filepath.Join("testdata", "compose-inline-secrets.yml")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"promptd: PROMPTD_TOKENS inline", "mysql: MYSQL_PASSWORD inline", `port "8080:8080" is published on every address`,
		"service promptd-2 missing", "promptd: env_file", "promptd: root file system writable", "service lb missing",
	} {
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, want) }) {
			t.Errorf("not refused for %q; problems: %q", want, problems)
		}
	}
	cfg := "backend promptd\n    server promptd-1 promptd:8080\n"
	if got := haproxyProblems(cfg); len(got) < 4 {
		t.Errorf("a balancer without checks and with one server: %q", got)
	}
}

func TestCompose_envExamples_holdEverySecretConsistently(t *testing.T) {
	p := envFile(readFile(t, repoPath("deploy", "compose", "promptd.env.example")))
	m := envFile(readFile(t, repoPath("deploy", "compose", "mysql.env.example")))
	for _, k := range []string{"PROMPTD_MYSQL_DSN", "PROMPTD_TOKENS", "PROMPTD_SECRET_KEY", "PROMPTD_METRICS_TOKEN"} {
		if p[k] == "" {
			t.Errorf("promptd.env.example: %s empty", k)
		}
	}
	for _, k := range []string{"MYSQL_ROOT_PASSWORD", "MYSQL_DATABASE", "MYSQL_USER", "MYSQL_PASSWORD"} {
		if m[k] == "" {
			t.Errorf("mysql.env.example: %s empty", k)
		}
		if _, leaked := p[k]; leaked {
			t.Errorf("promptd.env.example sets %s: promptd's container must not see MySQL's", k)
		}
	}
	if key, err := base64.StdEncoding.DecodeString(p["PROMPTD_SECRET_KEY"]); err != nil || len(key) != 32 {
		t.Errorf("PROMPTD_SECRET_KEY: %d bytes, %v; want 32, base64", len(key), err)
	}
	want := m["MYSQL_USER"] + ":" + m["MYSQL_PASSWORD"] + "@tcp(mysql:3306)/" + m["MYSQL_DATABASE"] + "?"
	if !strings.HasPrefix(p["PROMPTD_MYSQL_DSN"], want) {
		t.Errorf("PROMPTD_MYSQL_DSN %q does not start %q (mysql.env.example's account)", p["PROMPTD_MYSQL_DSN"], want)
	}
	ignored := strings.Fields(string(readFile(t, repoPath("deploy", "compose", ".gitignore"))))
	for _, f := range []string{"promptd.env", "mysql.env"} {
		if !slices.Contains(ignored, f) {
			t.Errorf("deploy/compose/.gitignore does not ignore %s", f)
		}
	}
}
