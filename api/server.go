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

	"github.com/promptd/promptd/internal/audit"
	"github.com/promptd/promptd/internal/idempotency"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/session"
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

	// Tokens are the bearer tokens the /v1 routes accept (PROMPTD_TOKENS).
	Tokens []Token
	// Prompts is the prompt store behind the /v1 routes.
	Prompts *promptstore.Store
	// Resolver decides who gets which version (cmd composes session pin ->
	// release arm -> env pointer); nil means Prompts' env pointers.
	Resolver promptstore.Resolver
	// History supplies session turns to assemble (the session service).
	// nil: a session_id on resolve or assemble is 404 session_not_found.
	History promptstore.History
	// Releases serves the release routes and the env's active release;
	// nil: those routes answer 500 internal.
	Releases *release.Service
	// Sessions serves the session routes; nil: they answer 500 internal.
	Sessions *session.Service
	// Events receives the generic lease events (lease.acquired,
	// lease.released, lease.renew_failed), written asynchronously; nil
	// drops them.
	Events *audit.Batcher
	// Idempotency records the outcomes of requests with an
	// Idempotency-Key; nil means a store over Prompts' database with the
	// default TTL.
	Idempotency *idempotency.Store
	// Audit lists audit events for GET /v1/audit; nil means audit.List
	// over Prompts' database.
	Audit AuditReader
	// ImportMaxBytes is the body limit of POST /v1/import; zero means
	// DefaultImportMaxBytes.
	ImportMaxBytes int64
}

// answerCacheBytes bounds the bodies the resolve answer cache holds.
const answerCacheBytes = 32 << 20

// DefaultImportMaxBytes is the body limit of POST /v1/import by default
// (64 MiB).
const DefaultImportMaxBytes = 64 << 20

// AuditReader lists audit events: audit.List over a database.
type AuditReader func(ctx context.Context, f audit.Filter) ([]audit.Event, int64, error)

// Server is promptd's HTTP server.
type Server struct {
	e       *echo.Echo
	cfg     Config
	log     *slog.Logger
	metrics *httpMetrics
	// limits holds per-route body limits (by route template) that differ
	// from cfg.BodyLimit, such as /v1/import's.
	limits map[string]int64
	// answers caches rendered resolve answers (prompt.go).
	answers *answerCache
	// secretHashes are the SHA-256 of cfg.Tokens' secrets, by index.
	secretHashes [][32]byte
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
	if cfg.ImportMaxBytes <= 0 {
		cfg.ImportMaxBytes = DefaultImportMaxBytes
	}
	if cfg.Prompts != nil {
		if cfg.Resolver == nil {
			cfg.Resolver = cfg.Prompts
		}
		if cfg.Idempotency == nil {
			cfg.Idempotency = idempotency.New(cfg.Prompts.DB(), idempotency.Options{})
		}
		if cfg.Audit == nil {
			db := cfg.Prompts.DB()
			cfg.Audit = func(ctx context.Context, f audit.Filter) ([]audit.Event, int64, error) { return audit.List(ctx, db, f) }
		}
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	// Client addresses come from the connection, never from headers a
	// client can forge.
	e.IPExtractor = echo.ExtractIPDirect()
	e.Server.ReadHeaderTimeout = 10 * time.Second
	e.Server.IdleTimeout = 2 * time.Minute
	e.Server.ErrorLog = slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn)

	s := &Server{e: e, cfg: cfg, log: cfg.Logger, metrics: newHTTPMetrics(cfg.Registerer),
		limits: map[string]int64{"/v1/import": cfg.ImportMaxBytes}, answers: newAnswerCache(answerCacheBytes),
		secretHashes: hashSecrets(cfg.Tokens)}
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
