package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// benchResolve publishes a 4 KB config and compares GET .../prompt with a
// bare Echo handler serving the same bytes from memory.
func benchResolve(ctx context.Context, c config, t *table) error {
	agent := c.prefix + "-resolve"
	system := strings.Repeat("You are a careful support agent. ", 4096/33)
	if err := do(ctx, "POST", c.url+"/v1/agents/"+agent+"/versions", c.admin, map[string]any{
		"base_version": 0, "config": map[string]any{"system": system, "model": map[string]any{"name": "m"}}}, 201, nil); err != nil {
		return err
	}
	if err := do(ctx, "PUT", c.url+"/v1/agents/"+agent+"/envs/prod", c.admin, map[string]any{"version": 1, "expected_revision": 0}, 201, nil); err != nil {
		return err
	}
	url := c.url + "/v1/agents/" + agent + "/envs/prod/prompt"
	body, err := fetch(ctx, url, c.runtime)
	if err != nil {
		return err
	}
	ref, stop, err := bareEcho(body)
	if err != nil {
		return err
	}
	defer stop()
	own, ownMetrics, stopOwn, err := bareProcess(body)
	if err != nil {
		return err
	}
	defer stopOwn()
	defer func(m cpuMeter) { meter = m }(meter)
	meter.metricsURLs = append(meter.metricsURLs[:len(meter.metricsURLs):len(meter.metricsURLs)], ownMetrics)
	get := func(u, token string) func(context.Context, int, int) error {
		return func(ctx context.Context, _, _ int) error {
			_, err := fetch(ctx, u, token)
			return err
		}
	}
	_ = load(ctx, "warm-up", c.conns, c.duration/10, get(url, c.runtime))
	_ = load(ctx, "warm-up", c.conns, c.duration/10, get(ref, ""))
	_ = load(ctx, "warm-up", c.conns, c.duration/10, get(own, ""))
	rs := loadTurns(ctx, c.conns, c.duration, c.rounds,
		named{fmt.Sprintf("resolve GET (%d B body)", len(body)), get(url, c.runtime)},
		named{fmt.Sprintf("bare Echo, same %d bytes", len(body)), get(ref, "")},
		named{"bare Echo in a process of its own, same bytes", get(own, "")})
	t.add(rs[0], rs[1], ">= 0.7x, p99 < 2 ms")
	t.also(rs[2], rs[1], "what serving from another process costs")
	return nil
}

// serveBareArg makes promptbench a bare Echo server of a file's bytes,
// in a process of its own (bareProcess).
const serveBareArg = "-serve-bare"

// bareProcess starts promptbench again as a bare Echo server of body and
// returns its URL and its /metrics URL; stop ends it.
func bareProcess(body []byte) (url, metrics string, stop func(), err error) {
	f, err := os.CreateTemp("", "promptbench-body-*")
	if err != nil {
		return "", "", nil, err
	}
	defer f.Close()
	if _, err := f.Write(body); err != nil {
		os.Remove(f.Name())
		return "", "", nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		os.Remove(f.Name())
		return "", "", nil, err
	}
	cmd := exec.Command(exe, serveBareArg, f.Name())
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		os.Remove(f.Name())
		return "", "", nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		os.Remove(f.Name())
		return "", "", nil, err
	}
	if err := cmd.Start(); err != nil {
		os.Remove(f.Name())
		return "", "", nil, err
	}
	stop = func() {
		in.Close() // the child exits when its stdin closes
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		os.Remove(f.Name())
	}
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		stop()
		return "", "", nil, fmt.Errorf("bare Echo process: %w", err)
	}
	base := "http://" + strings.TrimSpace(addr)
	return base + "/prompt", base + "/metrics", stop, nil
}

// serveBare serves file's bytes at /prompt and the process's metrics at
// /metrics on a loopback port, which it prints, until stdin closes.
func serveBare(file string, stdin io.Reader, stdout io.Writer) error {
	body, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.GET("/prompt", func(c echo.Context) error { return c.Blob(200, "application/json", body) })
	e.GET("/metrics", echo.WrapHandler(promhttp.Handler()))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: e}
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		_ = srv.Close()
	}()
	fmt.Fprintln(stdout, ln.Addr().String())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func fetch(ctx context.Context, url, token string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err == nil && res.StatusCode != 200 {
		err = fmt.Errorf("GET %s: %d", url, res.StatusCode)
	}
	return b, err
}

// bareEcho serves body from memory on a loopback port.
func bareEcho(body []byte) (string, func(), error) {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.GET("/prompt", func(c echo.Context) error { return c.Blob(200, "application/json", body) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: e}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String() + "/prompt", func() { _ = srv.Close() }, nil
}
