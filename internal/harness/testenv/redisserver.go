package testenv

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisServer is a private redis-server process, for tests of what happens
// when Redis stalls, dies or comes back empty. It keeps no data on disk, so
// after Kill and Restart it is empty.
//
// Pause, Resume and Kill may be called from any goroutine; Restart, like
// t.Fatal, only from the test's.
type RedisServer struct {
	t    testing.TB
	bin  string
	dir  string
	port int

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
}

// StartRedis starts a private redis-server on a free port of 127.0.0.1
// and waits until it answers. It is killed when the test ends.
func StartRedis(t testing.TB) *RedisServer {
	t.Helper()
	bin := os.Getenv(envRedisServer)
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("redis-server"); err != nil {
			unavailable(t, "redis-server not found (set "+envRedisServer+")")
		}
	}
	s := &RedisServer{t: t, bin: bin, dir: t.TempDir()}
	t.Cleanup(s.Kill)
	var err error
	for range 3 { // the free port may be taken before redis binds it
		s.port = FreePort(t)
		if err = s.start(); err == nil {
			return s
		}
	}
	t.Fatalf("testenv: %v", err)
	return nil
}

// Addr returns the server's host:port.
func (s *RedisServer) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL returns a redis:// URL of the server, database 0.
func (s *RedisServer) URL() string { return "redis://" + s.Addr() + "/0" }

// Client returns a client of the server that gives up quickly (200 ms
// timeouts, no retries), closed when t ends.
func (s *RedisServer) Client(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{
		Addr:          s.Addr(),
		DialTimeout:   200 * time.Millisecond,
		DialerRetries: 1,
		ReadTimeout:   200 * time.Millisecond,
		WriteTimeout:  200 * time.Millisecond,
		MaxRetries:    -1, // go-redis: 0 means the default, 3
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// PID returns the process id of the running server, or 0 after Kill.
func (s *RedisServer) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Pause stops the server with SIGSTOP: connections stay open, nothing is
// answered.
func (s *RedisServer) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused server with SIGCONT.
func (s *RedisServer) Resume() { s.signal(syscall.SIGCONT) }

func (s *RedisServer) signal(sig os.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		s.t.Errorf("testenv: %v to redis-server on %s: not running", sig, s.Addr())
		return
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Errorf("testenv: %v to redis-server on %s: %v", sig, s.Addr(), err)
	}
}

// Kill kills the server with SIGKILL and waits for it to exit. Killing a
// server that is not running does nothing.
func (s *RedisServer) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT) // a stopped process dies only once continued
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Restart kills the server if it is running and starts a new, empty one on
// the same port, waiting until it answers.
func (s *RedisServer) Restart() {
	s.t.Helper()
	s.Kill()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := s.start()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("testenv: restart: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// start starts redis-server on s.port and waits until it answers. It fails
// when the process exits first, e.g. because the port is taken.
func (s *RedisServer) start() error {
	logPath := filepath.Join(s.dir, "redis.log")
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.Command(s.bin, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()

	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()

	deadline := time.Now().Add(10 * time.Second)
	for {
		// Compare pids: the port may belong to another test's server.
		pid, err := serverPID(s.Addr())
		if err == nil && pid == cmd.Process.Pid {
			return nil
		}
		select {
		case <-exited:
			s.Kill()
			return fmt.Errorf("redis-server on %s exited: %s", s.Addr(), tail(logPath))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Kill()
			return fmt.Errorf("redis-server on %s not ready after 10s (%v): %s", s.Addr(), err, tail(logPath))
		}
	}
}

// serverPID asks the Redis server at addr for its process id. It speaks
// RESP itself: go-redis would log every refused dial while we poll.
func serverPID(addr string) (int, error) {
	conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := io.WriteString(conn, "INFO server\r\n"); err != nil {
		return 0, err
	}
	// The reply is "$<length>" and then "key:value" lines, or "-<error>".
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "-") {
			return 0, errors.New(line)
		}
		if v, ok := strings.CutPrefix(line, "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, fmt.Errorf("no process_id in INFO server reply (%v)", sc.Err())
}

// tail returns the end of a log file, for error messages.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}
