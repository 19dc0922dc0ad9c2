package api

import (
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// httpMetrics are the server's own collectors.
type httpMetrics struct {
	duration *prometheus.HistogramVec
	storeUp  *prometheus.GaugeVec
	mode     prometheus.Gauge
	// authFailures counts failed authentications by outcome: refused
	// (401, spending the address's budget) or limited (429, over it).
	authFailures *prometheus.CounterVec
	// observers caches duration's children by series (a seriesKey):
	// WithLabelValues hashes its labels and formats the status on every
	// call, and there are a few dozen series (routes are templates).
	observers sync.Map
}

// seriesKey names one series of the request duration histogram.
type seriesKey struct {
	method, route string
	status        int
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "promptd_http_request_duration_seconds",
			Help:    "HTTP request latency by method, route template and status.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"method", "route", "status"}),
		storeUp: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "promptd_store_up",
			Help: "Whether the store answered its last readiness check (1) or not (0); absent when disabled.",
		}, []string{"store"}),
		mode: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "promptd_degraded_mode",
			Help: "1 while a store is down (as of the last readiness check), else 0.",
		}),
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promptd_auth_failures_total",
			Help: "Failed authentications: refused (401, counted against the client address's budget) or limited (429, the address over PROMPTD_AUTH_FAILURES_PER_MINUTE).",
		}, []string{"outcome"}),
	}
	if reg != nil {
		reg.MustRegister(m.duration, m.storeUp, m.mode, m.authFailures)
	}
	return m
}

// methods bounds the method label; anything else is "other".
var methods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}

func (m *httpMetrics) observe(method, route string, status int, d time.Duration) {
	if !methods[method] {
		method = "other"
	}
	k := seriesKey{method, route, status}
	o, ok := m.observers.Load(k)
	if !ok {
		o, _ = m.observers.LoadOrStore(k, m.duration.WithLabelValues(method, route, strconv.Itoa(status)))
	}
	o.(prometheus.Observer).Observe(d.Seconds())
}

func (m *httpMetrics) storeState(store, state string) {
	switch state {
	case stateOK:
		m.storeUp.WithLabelValues(store).Set(1)
	case stateDown:
		m.storeUp.WithLabelValues(store).Set(0)
	default:
		m.storeUp.DeleteLabelValues(store)
	}
}

func (m *httpMetrics) degraded(on bool) {
	if on {
		m.mode.Set(1)
	} else {
		m.mode.Set(0)
	}
}

// handleMetrics serves the Prometheus text format, behind the metrics
// token when one is configured.
func (s *Server) handleMetrics() echo.HandlerFunc {
	h := promhttp.HandlerFor(s.cfg.Gatherer, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
	})
	return func(c echo.Context) error {
		if s.cfg.MetricsToken != "" && !tokenEqual(bearerToken(c.Request()), s.cfg.MetricsToken) {
			return errUnauthorized()
		}
		h.ServeHTTP(c.Response(), c.Request())
		return nil
	}
}
