package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/promptd/promptd/internal/harness/testenv"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	binDir    string
)

// TestMain removes the binary built for the end-to-end tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// promptdBinary builds ./cmd/promptd once per test run.
func promptdBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "promptd-e2e")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "promptd")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// process is a promptd started by a test.
type process struct {
	cmd    *exec.Cmd
	addr   string
	stderr *lockedBuffer
	exited chan struct{}
}

// startPromptd runs the binary with vars (and no other PROMPTD_ variable
// from the test's environment) and waits for its "listening" log line.
func startPromptd(t *testing.T, vars map[string]string) *process {
	t.Helper()
	cmd := exec.Command(promptdBinary(t))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PROMPTD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, stderr: &lockedBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
	})
	addrs := make(chan string, 1)
	go func() {
		defer close(p.exited)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				addrs <- line.Addr
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
	}()
	select {
	case p.addr = <-addrs:
	case <-p.exited:
		t.Fatalf("promptd exited before listening: %v\n%s", cmd.ProcessState, p.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("promptd did not log its address within 30s\n%s", p.stderr)
	}
	return p
}

// stop sends SIGTERM and asserts a clean exit within 5s.
func (p *process) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		t.Fatalf("promptd did not exit within 5s of SIGTERM")
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d after SIGTERM\n%s", code, p.stderr)
	}
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	res, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, strings.TrimSpace(string(b))
}

func TestE2E_embedded_servesAndStopsOnSIGTERM(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	p := startPromptd(t, map[string]string{"PROMPTD_ADDR": "127.0.0.1:0", "PROMPTD_DATA_DIR": dataDir})
	base := "http://" + p.addr
	if code, body := httpGet(t, base+"/healthz"); code != 200 || body != `{"status":"ok"}` {
		t.Errorf("/healthz = %d %s", code, body)
	}
	if code, body := httpGet(t, base+"/readyz"); code != 200 || body != `{"sql":"ok","redis":"disabled","etcd":"disabled","mode":"normal"}` {
		t.Errorf("/readyz = %d %s", code, body)
	}
	if code, body := httpGet(t, base+"/metrics"); code != 200 || !strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics = %d %.200s", code, body)
	}
	fi, err := os.Stat(dataDir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("data dir: %v, %v; want mode 0700", fi, err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "promptd.db")); err != nil {
		t.Errorf("SQLite file: %v", err)
	}
	fi, err = os.Stat(filepath.Join(dataDir, "tokens"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("tokens file: %v, %v; want mode 0600", fi, err)
	}
	tokens, err := readTokens(filepath.Join(dataDir, "tokens"))
	if err != nil {
		t.Fatal(err)
	}
	publishAndResolve(t, base, tokens[0].Secret, tokens[1].Secret)
	p.stop(t)
}

func TestE2E_mysqlAndRedis_servesAndStopsOnSIGTERM(t *testing.T) {
	p := startPromptd(t, map[string]string{
		"PROMPTD_ADDR":          "127.0.0.1:0",
		"PROMPTD_MYSQL_DSN":     testenv.MySQLDSN(t),
		"PROMPTD_REDIS_URL":     testenv.RedisURL(t),
		"PROMPTD_KEY_PREFIX":    fmt.Sprintf("e2e-%d", time.Now().UnixNano()),
		"PROMPTD_TOKENS":        "ops:admin:e2e-admin-secret-0123,agent:runtime:e2e-runtime-secret-0123",
		"PROMPTD_METRICS_TOKEN": "e2e-metrics-token",
		"PROMPTD_DATA_DIR":      filepath.Join(t.TempDir(), "unused"),
	})
	base := "http://" + p.addr
	if code, body := httpGet(t, base+"/readyz"); code != 200 || body != `{"sql":"ok","redis":"ok","etcd":"disabled","mode":"normal"}` {
		t.Errorf("/readyz = %d %s", code, body)
	}
	if code, _ := httpGet(t, base+"/metrics"); code != 401 {
		t.Errorf("/metrics without the token = %d, want 401", code)
	}
	publishAndResolve(t, base, "e2e-admin-secret-0123", "e2e-runtime-secret-0123")
	p.stop(t)
}

func TestE2E_mysqlWithoutRedis_refusesToStart(t *testing.T) {
	cmd := exec.Command(promptdBinary(t))
	cmd.Env = []string{"PROMPTD_ADDR=127.0.0.1:0", "PROMPTD_MYSQL_DSN=u:p@tcp(127.0.0.1:1)/x", "PROMPTD_TOKENS=ops:admin:0123456789abcdef"}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v, want code 1\n%s", err, out)
	}
	if !strings.Contains(string(out), "PROMPTD_SINGLE_INSTANCE=true") {
		t.Errorf("output does not explain the refusal:\n%s", out)
	}
}
