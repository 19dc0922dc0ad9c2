package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
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
	get := func(u, token string) func(context.Context, int, int) error {
		return func(ctx context.Context, _, _ int) error {
			_, err := fetch(ctx, u, token)
			return err
		}
	}
	_ = load(ctx, "warm-up", c.conns, c.duration/10, get(url, c.runtime))
	_ = load(ctx, "warm-up", c.conns, c.duration/10, get(ref, ""))
	r, rRef := loadPair(ctx, c.conns, c.duration, c.rounds,
		named{fmt.Sprintf("resolve GET (%d B body)", len(body)), get(url, c.runtime)},
		named{fmt.Sprintf("bare Echo, same %d bytes", len(body)), get(ref, "")})
	t.add(r, rRef, ">= 0.7x, p99 < 2 ms")
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
