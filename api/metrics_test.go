package api_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promptd/promptd/api"
)

func scrape(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	s := api.New(api.Config{Gatherer: reg, Runtime: bareRuntime(t)})
	rec := get(t, s.Handler(), "/metrics")
	if rec.Code != 200 {
		t.Fatalf("GET /metrics = %d", rec.Code)
	}
	return rec.Body.String()
}

func TestMetrics_withToken_requiresBearer(t *testing.T) {
	const token = "metrics-secret-0123456789"
	s, _, logs := newServer(t, api.Config{MetricsToken: token})
	for name, auth := range map[string]string{
		"no header":    "",
		"wrong token":  "Bearer not-the-token",
		"other scheme": "Basic " + token,
		"empty bearer": "Bearer ",
	} {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := do(t, s.Handler(), req)
		problem(t, rec, 401, "unauthorized")
		if rec.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("%s: no WWW-Authenticate", name)
		}
	}
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := do(t, s.Handler(), req)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), "promptd_http_request_duration_seconds") {
		t.Fatalf("with the token: %d %.200s", rec.Code, rec.Body)
	}
	if strings.Contains(logs.String(), token) || strings.Contains(logs.String(), "not-the-token") {
		t.Fatalf("a token reached the logs: %s", logs)
	}
}

func TestMetrics_withoutToken_isOpen(t *testing.T) {
	s, _, _ := newServer(t, api.Config{})
	if rec := get(t, s.Handler(), "/metrics"); rec.Code != 200 {
		t.Fatalf("GET /metrics = %d", rec.Code)
	}
}

func TestHTTPLatency_isRecordedByRouteTemplate(t *testing.T) {
	s, reg, _ := newServer(t, api.Config{})
	get(t, s.Handler(), "/healthz")
	get(t, s.Handler(), "/no/such/route/1")
	get(t, s.Handler(), "/no/such/route/2")
	body := scrape(t, reg)
	for _, want := range []string{
		`promptd_http_request_duration_seconds_count{method="GET",route="/healthz",status="200"} 1`,
		`promptd_http_request_duration_seconds_count{method="GET",route="unmatched",status="404"} 2`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestRequestLog_namesRoute_notHeaders(t *testing.T) {
	s, _, logs := newServer(t, api.Config{})
	req := httptest.NewRequest(http.MethodGet, "/healthz?token=q-secret", nil)
	req.Header.Set("Authorization", "Bearer header-secret")
	do(t, s.Handler(), req)
	out := logs.String()
	if !strings.Contains(out, `"route":"/healthz"`) || !strings.Contains(out, `"status":200`) {
		t.Errorf("request log lacks route or status: %s", out)
	}
	if strings.Contains(out, "header-secret") || strings.Contains(out, "q-secret") {
		t.Errorf("request log leaks a secret: %s", out)
	}
}
