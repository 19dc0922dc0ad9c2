package testenv

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// PromptdBinary builds cmd/promptd once per test binary and returns its
// path (removed with the temp dir of the OS at reboot; small).
func PromptdBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			buildErr = err
			return
		}
		root := filepath.Dir(strings.TrimSpace(string(out)))
		dir, err := os.MkdirTemp("", "promptd-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildPath = filepath.Join(dir, "promptd")
		cmd := exec.Command("go", "build", "-o", buildPath, "./cmd/promptd")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildPath
}

// Promptd is a promptd process started by a test.
type Promptd struct {
	URL  string
	Addr string

	t      testing.TB
	vars   map[string]string
	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	log    *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() > 1<<20 {
		s.b.Reset()
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.b.Bytes()
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// StartPromptd runs promptd with vars (and no other PROMPTD_ variable of
// the test's environment). PROMPTD_ADDR defaults to 127.0.0.1:0; the
// process is killed when t ends.
func StartPromptd(t testing.TB, vars map[string]string) *Promptd {
	t.Helper()
	p := &Promptd{t: t, vars: map[string]string{"PROMPTD_ADDR": "127.0.0.1:0"}, log: &syncBuffer{}}
	for k, v := range vars {
		p.vars[k] = v
	}
	t.Cleanup(p.Kill)
	p.start()
	return p
}

func (p *Promptd) start() {
	p.t.Helper()
	cmd := exec.Command(PromptdBinary(p.t))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PROMPTD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for k, v := range p.vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = procAttr()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		p.t.Fatal(err)
	}
	cmd.Stderr = p.log
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	exited := make(chan struct{})
	addrs := make(chan string, 1)
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(io.TeeReader(stdout, p.log))
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				select {
				case addrs <- line.Addr:
				default:
				}
			}
		}
		_ = cmd.Wait()
	}()
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.mu.Unlock()
	select {
	case addr := <-addrs:
		if p.Addr == "" { // set once: tests read URL concurrently with a Restart
			p.Addr, p.URL = addr, "http://"+addr
		} else if addr != p.Addr {
			p.t.Fatalf("promptd restarted on %s, not %s", addr, p.Addr)
		}
	case <-exited:
		p.t.Fatalf("promptd exited before listening: %s", p.log)
	case <-time.After(60 * time.Second):
		p.t.Fatalf("promptd did not listen within 60s: %s", p.log)
	}
}

// Restart starts the process again with the same variables, on the same
// address if it is still free.
func (p *Promptd) Restart() {
	p.t.Helper()
	p.Kill()
	p.vars["PROMPTD_ADDR"] = p.Addr
	p.start()
}

func (p *Promptd) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		_ = p.cmd.Process.Signal(sig)
	}
}

// Pause stops the process (SIGSTOP); Resume continues it.
func (p *Promptd) Pause()  { p.signal(syscall.SIGSTOP) }
func (p *Promptd) Resume() { p.signal(syscall.SIGCONT) }

// Kill kills the process (SIGKILL) and waits for it.
func (p *Promptd) Kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGCONT)
	_ = cmd.Process.Kill()
	<-exited
}

// Log is the tail of the process's output.
func (p *Promptd) Log() string { return p.log.String() }

// PID is the running process's id (0 when it is not running).
func (p *Promptd) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}
