package api

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
)

// DefaultBodyLimit is the largest request body accepted by default (1 MiB).
const DefaultBodyLimit = 1 << 20

// Config is what the server needs from cmd/promptd.
type Config struct {
	// Logger receives request logs and internal errors; nil means
	// slog.Default().
	Logger *slog.Logger
	// Checks are the readiness probes of the stores (/readyz).
	Checks Checks
	// CheckTimeout bounds each check; zero means 1s.
	CheckTimeout time.Duration
	// Gatherer is what /metrics exposes; nil means an empty registry.
	Gatherer prometheus.Gatherer
	// Registerer receives the server's own collectors (HTTP latency,
	// store health); nil means they are not registered.
	Registerer prometheus.Registerer
	// MetricsToken, when set, is the bearer token /metrics requires.
	MetricsToken string
	// BodyLimit is the largest request body; zero means DefaultBodyLimit.
	BodyLimit int64
}

// Server is promptd's HTTP server.
type Server struct {
	e       *echo.Echo
	cfg     Config
	log     *slog.Logger
	metrics *httpMetrics
	// limits holds per-route body limits (by route template) that differ
	// from cfg.BodyLimit, such as /v1/import's.
	limits map[string]int64
}

// New returns a server with every route registered.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.CheckTimeout <= 0 {
		cfg.CheckTimeout = time.Second
	}
	if cfg.Gatherer == nil {
		cfg.Gatherer = prometheus.NewRegistry()
	}
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = DefaultBodyLimit
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	// Client addresses come from the connection, never from headers a
	// client can forge.
	e.IPExtractor = echo.ExtractIPDirect()
	e.Server.ReadHeaderTimeout = 10 * time.Second
	e.Server.IdleTimeout = 2 * time.Minute
	e.Server.ErrorLog = slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn)

	s := &Server{e: e, cfg: cfg, log: cfg.Logger, metrics: newHTTPMetrics(cfg.Registerer), limits: map[string]int64{}}
	e.HTTPErrorHandler = s.handleError
	e.Use(s.observe, s.bodyLimit)
	s.routes()
	return s
}

// Handler returns the server as an http.Handler (for httptest).
func (s *Server) Handler() http.Handler { return s.e }

// Echo returns the underlying Echo instance.
func (s *Server) Echo() *echo.Echo { return s.e }

// Serve accepts connections on ln until Shutdown; it returns nil after a
// shutdown and the listener's error otherwise.
func (s *Server) Serve(ln net.Listener) error {
	err := s.e.Server.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting connections and waits, up to ctx's deadline,
// for requests in flight to finish.
func (s *Server) Shutdown(ctx context.Context) error { return s.e.Shutdown(ctx) }
