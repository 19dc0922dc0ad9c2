package api

import (
	"cmp"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/promptd/promptd"
	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/events"
	"github.com/promptd/promptd/telemetry"
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
	// Runtime is the application the /v1 routes serve: its services,
	// gated writes and change requests (required). The server only
	// decodes, calls it and encodes.
	Runtime *promptd.Runtime
	// FeedMetrics counts the open streams; nil counts nothing.
	FeedMetrics *events.FeedMetrics
	// StreamsPerToken caps the open event streams and waits per token on
	// this instance; zero means DefaultStreamsPerToken.
	StreamsPerToken int
	// HeavyPerToken caps the heavy requests (a bundle that must be built,
	// history, version and record lists, diff, audit) of one token in flight on
	// this instance (past it 429 quota_exceeded, Retry-After); HeavyMax
	// all of them (past it a request waits up to 2 s, then 503
	// overloaded). Zero means DefaultHeavyPerToken, DefaultHeavyMax.
	HeavyPerToken, HeavyMax int
	// AuthFailuresPerMinute is how many failed authentications a client
	// address may make per minute on this instance (in a burst of as
	// many) before its unknown tokens are refused with 429 quota_exceeded
	// without a SQL lookup; zero means DefaultAuthFailuresPerMinute,
	// negative turns the limit off.
	AuthFailuresPerMinute int
	// TrustedProxies are the proxies whose X-Forwarded-For names the
	// client (for the failed-authentication limit and the logs); empty:
	// the connection's address is the client's.
	TrustedProxies []netip.Prefix
	// FeedScanMax bounds the feed events one long-poll answer looks at
	// (a filter that matches little answers with next advanced, and the
	// client asks again); zero means DefaultFeedScanMax.
	FeedScanMax int
	// ImportMaxBytes is the body limit of POST /v1/import; zero means
	// DefaultImportMaxBytes.
	ImportMaxBytes int64
	// BundleMaxBytes is the largest GET /v1/bundle answer; zero means
	// DefaultBundleMaxBytes.
	BundleMaxBytes int64

	// MCPOff turns the MCP server off: /v1/mcp/{env} answers 404
	// not_found (after authentication, as every route).
	MCPOff bool
	// Console is the web console's files (console.Assets()), served at
	// /ui/ with login into a session cookie (console_auth.go); nil: the
	// console is off, /ui/ answers 404 and no cookie is accepted.
	Console fs.FS
	// ConsoleSessionTTL is how long a console login lasts; zero means
	// access.DefaultSessionTTL (12h).
	ConsoleSessionTTL time.Duration
	// ConsoleSecureCookie marks the session cookie Secure on every login
	// (a TLS proxy that sends no X-Forwarded-Proto); otherwise it is
	// Secure when the login came over TLS or X-Forwarded-Proto says https.
	ConsoleSecureCookie bool

	// Connection limits (zero means the default of each). See
	// DefaultReadTimeout and the others for what each bounds.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	// MaxConns caps the connections served at once (see connLimiter);
	// zero means DefaultMaxConns.
	MaxConns int
}

// Connection limits by default. A route that waits (a lease wait) moves its
// own deadlines by the wait (extendDeadlines), so that none of these has to
// cover the longest wait.
const (
	// DefaultReadHeaderTimeout bounds how long a connection may take to
	// send a request's headers: from its opening to the end of its first
	// request's headers, and from the first byte of each next one. A
	// connection that sends nothing, or never finishes its headers, is
	// closed after it.
	DefaultReadHeaderTimeout = 5 * time.Second
	// DefaultReadTimeout bounds reading a whole request, body included,
	// from the start of its headers: a client that sends its body slowly
	// or never is cut off after it. A 64 MiB import must arrive within it
	// (about 2.2 MB/s).
	DefaultReadTimeout = 30 * time.Second
	// DefaultWriteTimeout bounds a request from the end of its headers to
	// the end of its response (its upload, its work and the writing of
	// its answer): a client that does not read its response is cut off
	// after it, and the response's memory freed. The handler is not
	// stopped: what it wrote to the stores stays, only the answer is lost
	// (a retry with the same Idempotency-Key gets it).
	DefaultWriteTimeout = 60 * time.Second
	// DefaultIdleTimeout closes a kept-alive connection that sends no new
	// request.
	DefaultIdleTimeout = 30 * time.Second
	// DefaultMaxConns is the connection cap by default (about 20 KiB of
	// memory each when all are open and idle).
	DefaultMaxConns = 16384
)

// DefaultFeedScanMax is how many feed events one long-poll answer looks at
// by default: a filter that matches none of them answers after that many,
// next advanced by them (read from SQL: about 0.1 s on SQLite in the
// console benchmark, TestConsolePages_serverTimePerPage).
const DefaultFeedScanMax = 10000

// answerCacheBytes bounds the bodies the resolve answer cache holds.
const answerCacheBytes = 32 << 20

// DefaultImportMaxBytes is the body limit of POST /v1/import by default
// (64 MiB).
const DefaultImportMaxBytes = 64 << 20

// Server is promptd's HTTP server.
type Server struct {
	e       *echo.Echo
	cfg     Config
	rt      *promptd.Runtime // cfg.Runtime
	log     *slog.Logger
	metrics *httpMetrics
	// limits holds per-route body limits (by route template) that differ
	// from cfg.BodyLimit, such as /v1/import's.
	limits map[string]int64
	// answers caches rendered resolve answers (prompt.go).
	answers *answerCache
	// secretHashes are the SHA-256 of cfg.Tokens' secrets, by index.
	secretHashes [][32]byte
	bootstrap    []*access.Token
	// needs are the scope decisions of the /v1 routes, by "METHOD path",
	// as routes() registered them (scopes.go).
	needs map[string]scopeNeed
	// console holds the console's files (nil: the console is off).
	console consoleFiles
	// authLimit refuses client addresses that fail to authenticate too
	// often (nil: off).
	authLimit *authLimiter
	// streams counts open event streams per token; closing ends them at
	// Shutdown.
	streams   *streamSlots
	heavyGate *heavyGate
	// bundleBodies keeps recently built bundle bodies by ETag.
	bundleBodies *bodyCache
	frames       frameCache
	closing      context.Context
	closeAll     context.CancelFunc
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
	if cfg.Runtime == nil {
		panic("api: Config.Runtime is required")
	}
	if cfg.ImportMaxBytes <= 0 {
		cfg.ImportMaxBytes = DefaultImportMaxBytes
	}
	if cfg.BundleMaxBytes <= 0 {
		cfg.BundleMaxBytes = DefaultBundleMaxBytes
	}
	cfg.ReadHeaderTimeout = cmp.Or(cfg.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	cfg.ReadTimeout = cmp.Or(cfg.ReadTimeout, DefaultReadTimeout)
	cfg.WriteTimeout = cmp.Or(cfg.WriteTimeout, DefaultWriteTimeout)
	cfg.IdleTimeout = cmp.Or(cfg.IdleTimeout, DefaultIdleTimeout)
	cfg.MaxConns = cmp.Or(cfg.MaxConns, DefaultMaxConns)
	cfg.FeedScanMax = cmp.Or(cfg.FeedScanMax, DefaultFeedScanMax)
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	// Client addresses come from the connection, never from headers a
	// client can forge; from a trusted proxy, from the X-Forwarded-For
	// entry it added (the rightmost address that is not a trusted proxy).
	e.IPExtractor = echo.ExtractIPDirect()
	if len(cfg.TrustedProxies) > 0 {
		trust := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
		for _, p := range cfg.TrustedProxies {
			p = p.Masked()
			trust = append(trust, echo.TrustIPRange(&net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}))
		}
		e.IPExtractor = echo.ExtractIPFromXFFHeader(trust...)
	}
	e.Server.ReadHeaderTimeout = cfg.ReadHeaderTimeout
	e.Server.ReadTimeout = cfg.ReadTimeout
	e.Server.WriteTimeout = cfg.WriteTimeout
	e.Server.IdleTimeout = cfg.IdleTimeout
	e.Server.ErrorLog = slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn)

	metrics := newHTTPMetrics(cfg.Registerer)
	s := &Server{e: e, cfg: cfg, rt: cfg.Runtime, log: cfg.Logger, metrics: metrics,
		limits: map[string]int64{"/v1/import": cfg.ImportMaxBytes}, answers: newAnswerCache(answerCacheBytes),
		secretHashes: hashSecrets(cfg.Tokens), bootstrap: bootstrapTokens(cfg.Tokens),
		console: loadConsole(cfg.Console), authLimit: newAuthLimiter(cfg.AuthFailuresPerMinute, e.IPExtractor, metrics.authFailures),
		streams:      &streamSlots{open: map[string]int{}, limit: cmp.Or(cfg.StreamsPerToken, DefaultStreamsPerToken)},
		bundleBodies: newBodyCache(bundleCacheBytes),
		heavyGate:    newHeavyGate(cmp.Or(cfg.HeavyPerToken, DefaultHeavyPerToken), cmp.Or(cfg.HeavyMax, DefaultHeavyMax))}
	s.closing, s.closeAll = context.WithCancel(context.Background())
	e.HTTPErrorHandler = s.handleError
	if telemetry.Enabled() { // off: not even the middleware's call
		e.Use(s.observe, s.trace, s.bodyLimit)
	} else {
		e.Use(s.observe, s.bodyLimit)
	}
	s.needs = map[string]scopeNeed{}
	s.routes()
	return s
}

// Handler returns the server as an http.Handler (for httptest).
func (s *Server) Handler() http.Handler { return s.e }

// Echo returns the underlying Echo instance.
func (s *Server) Echo() *echo.Echo { return s.e }

// Serve accepts connections on ln, at most Config.MaxConns at once, until
// Shutdown; it returns nil after a shutdown and the listener's error
// otherwise. Call it once.
func (s *Server) Serve(ln net.Listener) error {
	l := newConnLimiter(ln, s.cfg.MaxConns)
	s.e.Server.ConnState = l.track
	err := s.e.Server.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting connections, ends event streams and long-polls
// (their clients resume elsewhere) and waits, up to ctx's deadline, for
// requests in flight to finish.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closeAll()
	return s.e.Shutdown(ctx)
}
