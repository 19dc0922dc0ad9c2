package api_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/api"
	"github.com/promptd/promptd/locks"
)

func ok(context.Context) error   { return nil }
func down(context.Context) error { return errors.New("connection refused") }

func TestHealthz_isOK(t *testing.T) {
	s, _, _ := newServer(t, api.Config{})
	rec := get(t, s.Handler(), "/healthz")
	if rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != `{"status":"ok"}` {
		t.Fatalf("GET /healthz = %d %s", rec.Code, rec.Body)
	}
}

func TestHealthzAndReadyz_head_answerLikeGetWithoutABody(t *testing.T) {
	for _, tc := range []struct {
		name   string
		checks api.Checks
		path   string
		status int
	}{
		{"healthz", api.Checks{}, "/healthz", 200},
		{"readyz", api.Checks{SQL: ok}, "/readyz", 200},
		{"readyz, no store", api.Checks{}, "/readyz", 503},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _, _ := newServer(t, api.Config{Checks: tc.checks})
			srv := httptest.NewServer(s.Handler())
			defer srv.Close()
			res, err := http.Head(srv.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != tc.status || len(body) != 0 || res.Header.Get("Cache-Control") != "no-store" {
				t.Fatalf("HEAD %s = %d, %d body bytes, Cache-Control %q; want %d, none, no-store",
					tc.path, res.StatusCode, len(body), res.Header.Get("Cache-Control"), tc.status)
			}
		})
	}
}

func TestReadyz_reportsStoresAndMode(t *testing.T) {
	hang := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	for _, tc := range []struct {
		name       string
		sql, redis func(context.Context) error
		status     int
		body       string
	}{
		{"sql only", ok, nil, 200, `{"sql":"ok","redis":"disabled","etcd":"disabled","mode":"normal"}`},
		{"both up", ok, ok, 200, `{"sql":"ok","redis":"ok","etcd":"disabled","mode":"normal"}`},
		{"redis down", ok, down, 200, `{"sql":"ok","redis":"down","etcd":"disabled","mode":"degraded"}`},
		{"sql down", down, ok, 200, `{"sql":"down","redis":"ok","etcd":"disabled","mode":"degraded"}`},
		{"sql down, no redis", down, nil, 503, `{"sql":"down","redis":"disabled","etcd":"disabled","mode":"degraded"}`},
		{"both down", down, down, 503, `{"sql":"down","redis":"down","etcd":"disabled","mode":"degraded"}`},
		{"redis stalls", ok, hang, 200, `{"sql":"ok","redis":"down","etcd":"disabled","mode":"degraded"}`},
		{"no sql check", nil, nil, 503, `{"sql":"down","redis":"disabled","etcd":"disabled","mode":"degraded"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _, _ := newServer(t, api.Config{
				Checks:       api.Checks{SQL: tc.sql, Redis: tc.redis},
				CheckTimeout: 50 * time.Millisecond,
			})
			start := time.Now()
			rec := get(t, s.Handler(), "/readyz")
			if rec.Code != tc.status || strings.TrimSpace(rec.Body.String()) != tc.body {
				t.Fatalf("GET /readyz = %d %s, want %d %s", rec.Code, rec.Body, tc.status, tc.body)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("readyz took %v: checks are not bounded", d)
			}
		})
	}
}

// With leases on etcd, /readyz reports it; a down etcd degrades the
// instance (lease routes fail) but resolve and writes go on, so 200 while
// SQL answers.
func TestReadyz_whenLeasesOnEtcd_reportsEtcdAndDegradesWhenDown(t *testing.T) {
	for _, tc := range []struct {
		name            string
		sql, redis, etc func(context.Context) error
		status          int
		body            string
	}{
		{"etcd up", ok, nil, ok, 200, `{"sql":"ok","redis":"disabled","etcd":"ok","mode":"normal"}`},
		{"etcd down", ok, nil, down, 200, `{"sql":"ok","redis":"disabled","etcd":"down","mode":"degraded"}`},
		{"etcd down, redis up", ok, ok, down, 200, `{"sql":"ok","redis":"ok","etcd":"down","mode":"degraded"}`},
		{"sql down, etcd up", down, nil, ok, 503, `{"sql":"down","redis":"disabled","etcd":"ok","mode":"degraded"}`},
		{"no etcd", ok, ok, nil, 200, `{"sql":"ok","redis":"ok","etcd":"disabled","mode":"normal"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, reg, _ := newServer(t, api.Config{Checks: api.Checks{SQL: tc.sql, Redis: tc.redis, Etcd: tc.etc},
				CheckTimeout: 50 * time.Millisecond})
			rec := get(t, s.Handler(), "/readyz")
			if rec.Code != tc.status || strings.TrimSpace(rec.Body.String()) != tc.body {
				t.Fatalf("GET /readyz = %d %s, want %d %s", rec.Code, rec.Body, tc.status, tc.body)
			}
			if tc.etc != nil {
				want := map[bool]string{true: `promptd_store_up{store="etcd"} 1`, false: `promptd_store_up{store="etcd"} 0`}[tc.name != "etcd down" && tc.name != "etcd down, redis up"]
				if body := scrape(t, reg); !strings.Contains(body, want) {
					t.Errorf("metrics lack %q", want)
				}
			}
		})
	}
}

func TestReadyz_recordsDegradedMetric(t *testing.T) {
	s, reg, _ := newServer(t, api.Config{Checks: api.Checks{SQL: ok, Redis: down}})
	get(t, s.Handler(), "/readyz")
	body := scrape(t, reg)
	for _, want := range []string{"promptd_degraded_mode 1", `promptd_store_up{store="redis"} 0`, `promptd_store_up{store="sql"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestUnknownRoute_isNotFoundProblem(t *testing.T) {
	s, _, _ := newServer(t, api.Config{})
	p := problem(t, get(t, s.Handler(), "/v1/nothing-here"), 404, "not_found")
	if p["title"] != "Not found" {
		t.Errorf("title = %v", p["title"])
	}
}

func TestWrongMethod_isMethodNotAllowedProblem(t *testing.T) {
	s, _, _ := newServer(t, api.Config{})
	rec := do(t, s.Handler(), httptest.NewRequest(http.MethodDelete, "/healthz", nil))
	problem(t, rec, 405, "method_not_allowed")
	if allow := rec.Header().Get("Allow"); !strings.Contains(allow, "GET") {
		t.Errorf("Allow = %q, want GET listed", allow)
	}
}

// echoBody registers a test route that reads its body.
func echoBody(s *api.Server) {
	s.Echo().POST("/test/echo", func(c echo.Context) error {
		b, err := io.ReadAll(c.Request().Body)
		if err != nil {
			return err
		}
		return c.String(200, string(b[:min(len(b), 5)]))
	})
}

func TestBodyOverLimit_isBodyTooLarge(t *testing.T) {
	s, _, _ := newServer(t, api.Config{})
	echoBody(s)
	big := strings.Repeat("x", api.DefaultBodyLimit+1)

	// Content-Length says so: rejected before the handler runs.
	p := problem(t, do(t, s.Handler(), httptest.NewRequest(http.MethodPost, "/test/echo", strings.NewReader(big))), 413, "body_too_large")
	if p["limit"] != float64(api.DefaultBodyLimit) {
		t.Errorf("limit = %v, want %d", p["limit"], api.DefaultBodyLimit)
	}

	// No Content-Length (chunked): rejected when the handler reads past it.
	req := httptest.NewRequest(http.MethodPost, "/test/echo", iotest.OneByteReader(strings.NewReader(big)))
	req.ContentLength = -1
	p = problem(t, do(t, s.Handler(), req), 413, "body_too_large")
	if p["limit"] != float64(api.DefaultBodyLimit) {
		t.Errorf("chunked: limit = %v", p["limit"])
	}

	// At the limit: accepted.
	rec := do(t, s.Handler(), httptest.NewRequest(http.MethodPost, "/test/echo", strings.NewReader(big[1:])))
	if rec.Code != 200 {
		t.Fatalf("body at the limit: %d %s", rec.Code, rec.Body)
	}
}

func TestPanic_isInternalWithoutDetails(t *testing.T) {
	s, _, logs := newServer(t, api.Config{})
	s.Echo().GET("/test/panic", func(echo.Context) error { panic("secret-panic-text") })
	rec := get(t, s.Handler(), "/test/panic")
	problem(t, rec, 500, "internal")
	if strings.Contains(rec.Body.String(), "secret-panic-text") {
		t.Fatalf("500 body leaks the panic: %s", rec.Body)
	}
	if !strings.Contains(logs.String(), "secret-panic-text") {
		t.Errorf("the panic was not logged: %s", logs)
	}
	// The server still serves.
	if rec := get(t, s.Handler(), "/healthz"); rec.Code != 200 {
		t.Fatalf("after a panic: %d", rec.Code)
	}
}

func TestUnexpectedError_isInternalWithoutDetails(t *testing.T) {
	s, _, logs := newServer(t, api.Config{})
	s.Echo().GET("/test/fail", func(echo.Context) error { return errors.New("dial mysql: password=hunter2") })
	rec := get(t, s.Handler(), "/test/fail")
	problem(t, rec, 500, "internal")
	if strings.Contains(rec.Body.String(), "hunter2") {
		t.Fatalf("500 body leaks the cause: %s", rec.Body)
	}
	if !strings.Contains(logs.String(), "hunter2") {
		t.Errorf("the cause was not logged")
	}
}

func TestError_codeAndFields_becomeProblem(t *testing.T) {
	s, _, logs := newServer(t, api.Config{})
	s.Echo().GET("/test/conflict", func(echo.Context) error {
		return api.Errorf("revision_conflict", "agent a env prod is at revision %d", 7).With("current_revision", 7)
	})
	s.Echo().GET("/test/redis", func(echo.Context) error {
		return errors.Join(errors.New("acquire"), locks.ErrUnavailable)
	})
	p := problem(t, get(t, s.Handler(), "/test/conflict"), 409, "revision_conflict")
	if p["current_revision"] != float64(7) || p["title"] != "Revision conflict" {
		t.Errorf("problem = %v", p)
	}
	rec := get(t, s.Handler(), "/test/redis")
	p = problem(t, rec, 503, "store_unavailable")
	if p["store"] != "redis" || rec.Header().Get("Retry-After") == "" {
		t.Errorf("problem = %v, Retry-After %q", p, rec.Header().Get("Retry-After"))
	}
	if strings.Contains(logs.String(), "revision_conflict") && strings.Contains(logs.String(), "request failed") {
		t.Errorf("an expected 4xx was logged as a failure: %s", logs)
	}
}

func TestError_status_comesFromTheCodeTable(t *testing.T) {
	for code, want := range map[string]int{
		"not_found": 404, "revision_conflict": 409, "lease_held": 423, "body_too_large": 413,
		"store_unavailable": 503, "internal": 500, "no_such_code": 500,
	} {
		if got := api.Errorf(code, "x").Status(); got != want {
			t.Errorf("Status of %s = %d, want %d", code, got, want)
		}
	}
}
