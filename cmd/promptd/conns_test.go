package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
)

const (
	testAdmin   = "0123456789abcdef-admin"
	testRuntime = "0123456789abcdef-runtime"
)

// openLimited starts an embedded promptd with the given PROMPTD_* limits
// and two tokens; it returns its address.
func openLimited(t *testing.T, vars map[string]string) (*Main, string) {
	t.Helper()
	all := map[string]string{
		"PROMPTD_DATA_DIR": filepath.Join(t.TempDir(), "data"),
		"PROMPTD_TOKENS":   "ops:admin:" + testAdmin + ",agents:runtime:" + testRuntime,
	}
	for k, v := range vars {
		all[k] = v
	}
	cfg, err := loadConfig(env(all))
	if err != nil {
		t.Fatal(err)
	}
	m := openMain(t, cfg, io.Discard)
	return m, m.Addr().String()
}

// closedWithin reads c until the server closes it and reports how long
// that took; it fails the test if c is still open after limit.
func closedWithin(t *testing.T, c net.Conn, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(limit))
	_, err := io.Copy(io.Discard, c)
	took := time.Since(start)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server had not closed the connection after %s", limit)
	}
	return took
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestMain_slowBody_isCutOffByReadTimeout(t *testing.T) {
	_, addr := openLimited(t, map[string]string{"PROMPTD_READ_TIMEOUT": "1s", "PROMPTD_READ_HEADER_TIMEOUT": "1s"})
	for _, token := range []string{"", testRuntime} { // answered 401 at once, or read by the handler
		auth := ""
		if token != "" {
			auth = "Authorization: Bearer " + token + "\r\n"
		}
		c := dial(t, addr)
		fmt.Fprintf(c, "POST /v1/sessions HTTP/1.1\r\nHost: x\r\n%sContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{", auth)
		if took := closedWithin(t, c, 5*time.Second); took > 3*time.Second {
			t.Errorf("with token %v: closed after %s, want about the 1s read timeout", token != "", took)
		}
	}
}

func TestMain_unfinishedHeaders_areCutOffByReadHeaderTimeout(t *testing.T) {
	_, addr := openLimited(t, map[string]string{"PROMPTD_READ_HEADER_TIMEOUT": "500ms"})
	for _, sent := range []string{"", "GET /healthz HTTP/1.1\r\nHost: x\r\n"} {
		c := dial(t, addr)
		_, _ = io.WriteString(c, sent)
		if took := closedWithin(t, c, 5*time.Second); took > 3*time.Second {
			t.Errorf("after %q: closed after %s, want about 500ms", sent, took)
		}
	}
}

func TestMain_idleKeepAlive_isClosedByIdleTimeout(t *testing.T) {
	_, addr := openLimited(t, map[string]string{"PROMPTD_IDLE_TIMEOUT": "500ms"})
	c := dial(t, addr)
	_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("GET /healthz: %v %v", res, err)
	}
	if took := closedWithin(t, c, 5*time.Second); took > 3*time.Second {
		t.Errorf("idle connection closed after %s, want about 500ms", took)
	}
}

func TestMain_clientNotReadingALargeResponse_isCutOffByWriteTimeout(t *testing.T) {
	m, addr := openLimited(t, map[string]string{"PROMPTD_WRITE_TIMEOUT": "1s"})
	// A route with a 64 MiB answer, far beyond what the sockets buffer.
	done := make(chan error, 1)
	chunk := []byte(strings.Repeat("x", 1<<20))
	m.server.Echo().GET("/test/large", func(c echo.Context) error {
		c.Response().WriteHeader(http.StatusOK)
		var err error
		for i := 0; i < 64 && err == nil; i++ {
			_, err = c.Response().Write(chunk)
		}
		done <- err
		return nil
	})
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "GET /test/large HTTP/1.1\r\nHost: x\r\n\r\n")
	start := time.Now()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the whole response was written to a client that read none of it")
		}
		if took := time.Since(start); took > 4*time.Second {
			t.Errorf("the write failed after %s, want about the 1s write timeout", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler was still writing to a client that does not read, 10s after the 1s write timeout")
	}
	// The server closed the connection: reading now drains what was
	// buffered and ends.
	if took := closedWithin(t, c, 10*time.Second); took > 8*time.Second {
		t.Errorf("connection closed after %s", took)
	}
}

// request sends one request with a runtime token and decodes the JSON
// answer into out (when not nil).
func request(t *testing.T, method, url, body string, header map[string]string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testRuntime)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, url, err)
		return 0
	}
	defer res.Body.Close()
	if out != nil {
		_ = json.NewDecoder(res.Body).Decode(out)
	}
	return res.StatusCode
}

func TestMain_leaseWait_longerThanTheTimeouts_succeeds(t *testing.T) {
	_, addr := openLimited(t, map[string]string{"PROMPTD_READ_TIMEOUT": "1s", "PROMPTD_WRITE_TIMEOUT": "1s"})
	base := "http://" + addr
	publishAndResolve(t, base, testAdmin, testRuntime)
	if code := request(t, "POST", base+"/v1/sessions", `{"session_id": "s1", "agent": "support", "env": "prod"}`, nil, nil); code != 201 {
		t.Fatalf("create session: %d", code)
	}
	for _, route := range []struct {
		name, acquire, body string
		release             func(lease map[string]any) string
	}{
		{"session", base + "/v1/sessions/s1/lease", `{"holder": "%s", "ttl_ms": 10000, "wait_ms": %d, "mode": "wait"}`,
			func(map[string]any) string { return base + "/v1/sessions/s1/lease" }},
		{"generic", base + "/v1/leases", `{"resources": ["order-1"], "holder": "%s", "ttl_ms": 10000, "wait_ms": %d}`,
			func(l map[string]any) string { return base + "/v1/leases/" + l["lease_id"].(string) }},
	} {
		t.Run(route.name, func(t *testing.T) {
			var first map[string]any
			if code := request(t, "POST", route.acquire, fmt.Sprintf(route.body, "a", 0), nil, &first); code != 200 {
				t.Fatalf("first acquire: %d", code)
			}
			// The holder releases after 3s, three times the timeouts; the
			// waiter, which may wait 6s, must get the lease then.
			var wg sync.WaitGroup
			wg.Go(func() {
				time.Sleep(3 * time.Second)
				if code := request(t, "DELETE", route.release(first), "", map[string]string{"Lease-Token": first["token"].(string)}, nil); code != 204 {
					t.Errorf("release: %d", code)
				}
			})
			start := time.Now()
			var second map[string]any
			code := request(t, "POST", route.acquire, fmt.Sprintf(route.body, "b", 6000), nil, &second)
			wg.Wait()
			if code != 200 || second["token"] == nil {
				t.Fatalf("acquire with wait_ms 6000 after %s: %d %v", time.Since(start), code, second)
			}
		})
	}
}

func TestMain_atTheConnectionCap_aNewConnectionTakesAnIdleOnesPlace(t *testing.T) {
	_, addr := openLimited(t, map[string]string{"PROMPTD_MAX_CONNS": "4", "PROMPTD_READ_HEADER_TIMEOUT": "30s"})
	idle := make([]net.Conn, 6) // more than the cap: the oldest are closed as new ones come
	for i := range idle {
		idle[i] = dial(t, addr)
	}
	start := time.Now()
	if code, body := call(t, "GET", "http://"+addr+"/healthz", "", ""); code != 200 {
		t.Fatalf("/healthz with the cap full of idle connections: %d %s", code, body)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("/healthz took %s with the cap full of idle connections", took)
	}
	// The server closed the oldest ones to make room: at most the cap is open.
	open := 0
	for _, c := range idle {
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				open++
			}
		}
	}
	if open > 4 {
		t.Errorf("%d idle connections still open, cap 4", open)
	}
}

func TestMain_atTheConnectionCap_busyConnections_makeANewOneWait(t *testing.T) {
	_, addr := openLimited(t, map[string]string{"PROMPTD_MAX_CONNS": "2", "PROMPTD_READ_TIMEOUT": "30s"})
	// Two requests in progress (their bodies unfinished) fill the cap.
	busy := []net.Conn{dial(t, addr), dial(t, addr)}
	for _, c := range busy {
		fmt.Fprintf(c, "POST /v1/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 100\r\n\r\n{", testRuntime)
	}
	time.Sleep(200 * time.Millisecond) // let the server read their headers
	c := dial(t, addr)
	_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("a third connection was served with the cap of 2 full of requests in progress")
	}
	_ = busy[0].Close()
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("after a busy connection closed: %v %v", res, err)
	}
}

func TestMain_dataDirWithLooseModes_isMadePrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // whatever the umask
		t.Fatal(err)
	}
	db := filepath.Join(dir, "promptd.db")
	if err := os.WriteFile(db, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(db, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(env(map[string]string{"PROMPTD_DATA_DIR": dir}))
	if err != nil {
		t.Fatal(err)
	}
	openMain(t, cfg, io.Discard)
	want := map[string]os.FileMode{dir: 0o700, db: 0o600, db + "-wal": 0o600, db + "-shm": 0o600, filepath.Join(dir, "tokens"): 0o600}
	for path, mode := range want {
		fi, err := os.Stat(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if got := fi.Mode().Perm(); got != mode {
			t.Errorf("%s: mode %o, want %o", filepath.Base(path), got, mode)
		}
	}
}
