package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"gorm.io/gorm"

	"github.com/promptd/promptd"
	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/api"
	"github.com/promptd/promptd/api/idempotency"
	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/board"
	"github.com/promptd/promptd/events"
	"github.com/promptd/promptd/exposure"
	"github.com/promptd/promptd/intent"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/session"
	"github.com/promptd/promptd/sqlstore"
	"github.com/promptd/promptd/telemetry"
)

// shutdownTimeout bounds how long requests in flight may take to finish.
const shutdownTimeout = 10 * time.Second

// Main is a running promptd: its stores, lock manager and HTTP server.
// Open starts it, Close stops it; tests run it in process on port 0.
type Main struct {
	Config Config
	Logger *slog.Logger

	db       *gorm.DB
	redis    redis.UniversalClient // *redis.ClusterClient with PROMPTD_REDIS_CLUSTER; nil without PROMPTD_REDIS_URL
	locker   *locks.Manager
	etcd     *clientv3.Client   // with PROMPTD_ETCD_ENDPOINTS: every lease is on it
	backend  *lockBackendRecord // this instance's row in lock_backends
	registry *prometheus.Registry
	rt       *promptd.Runtime // the domain services
	store    *promptstore.Store
	events   *audit.Batcher // lease events and rejected writes, written in batches
	releases *release.Service
	sessions *session.Service
	stopJobs context.CancelFunc // ends Runtime.Run
	jobsDone chan struct{}
	server   *api.Server
	ln       net.Listener
	served   chan error // the server's exit, once
}

// NewMain returns a Main for cfg that logs to log.
func NewMain(cfg Config, log *slog.Logger) *Main {
	return &Main{Config: cfg, Logger: log, served: make(chan error, 1)}
}

// Open connects the stores, migrates the schema, listens on Config.Addr
// and starts serving in the background. On error, call Close.
func (m *Main) Open(ctx context.Context) error {
	cfg := m.Config
	m.registry = prometheus.NewRegistry()
	m.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildInfo())

	if err := m.openSQL(ctx); err != nil {
		return err
	}
	if err := sqlstore.Migrate(ctx, m.db, append(promptd.Migrations(), lockBackendMigrations()...)...); err != nil {
		return err
	}
	lockOpts := locks.Options{Holder: cfg.InstanceID, Metrics: locks.NewMetrics(m.registry), Logger: m.Logger,
		MaxWaiters: cfg.LeaseMaxWaiters}
	checks := api.Checks{SQL: func(ctx context.Context) error { return sqlstore.Ping(ctx, m.db) }}
	if cfg.RedisURL != "" {
		if err := m.openRedis(ctx); err != nil {
			return err
		}
		checks.Redis = func(ctx context.Context) error { return pingRedis(ctx, m.redis) }
	}
	backend := "memory"
	switch {
	case cfg.Etcd.enabled():
		c, err := cfg.Etcd.client()
		if err != nil {
			return err
		}
		m.etcd, backend = c, "etcd"
		m.locker = locks.NewEtcd(c, locks.EtcdOptions{Keys: locks.Keys{Prefix: cfg.KeyPrefix}, Timeout: cfg.Etcd.Timeout,
			Logger: m.Logger}, lockOpts)
		checks.Etcd = m.locker.Ping // a linearizable read: down without a quorum
	case cfg.RedisURL != "":
		backend = "redis"
		m.locker = locks.NewRedis(m.redis, locks.RedisOptions{Keys: locks.Keys{Prefix: cfg.KeyPrefix}, Timeout: cfg.RedisTimeout,
			FenceTTL: cfg.LockFenceTTL}, lockOpts)
	default:
		m.locker = locks.NewMemory(lockOpts)
	}
	rec, err := recordLockBackend(ctx, m.db, cfg.InstanceID, backend, m.Logger)
	if err != nil {
		return err
	}
	m.backend = rec

	tokens, err := m.tokens()
	if err != nil {
		return err
	}
	keys := locks.Keys{Prefix: cfg.KeyPrefix}
	hooks, err := m.webhookOptions()
	if err != nil {
		return err
	}
	feedMetrics := events.NewFeedMetrics(m.registry)
	var etcdBus events.EtcdClient // with etcd and no Redis, the bus is an etcd watch
	if m.etcd != nil && m.redis == nil {
		etcdBus = m.etcd
	}
	// The domain services, wired as package promptd wires them for any
	// embedding program (resolution: session pin -> release arm -> env
	// pointer).
	guard := cfg.GuardEvery
	if guard == 0 {
		guard = -1 // PROMPTD_GUARD_EVERY=0: guards off
	}
	m.rt = promptd.New(m.db, promptd.Options{
		Instance: cfg.InstanceID,
		Logger:   m.Logger,
		Locker:   m.locker, Keys: keys, Redis: m.redis, RedisTimeout: cfg.RedisTimeout,
		Etcd: etcdBus, EtcdTimeout: cfg.Etcd.Timeout,
		EventRetention: cfg.EventRetention, FeedMetrics: feedMetrics, Webhooks: hooks,
		Exposures:        exposure.Options{Metrics: exposure.NewMetrics(m.registry, cfg.ExposureSeriesMax)},
		Access:           access.Options{Reserved: tokenNames(tokens)},
		Idempotency:      idempotency.Options{TTL: cfg.IdempotencyTTL},
		LeaseMaxPerOwner: cfg.LeaseMaxPerToken,
		Jobs: promptd.JobOptions{ReconcileEvery: cfg.ReconcileEvery, GuardEvery: guard, AuditRetention: cfg.AuditRetention,
			AuditPruneEvery: cfg.AuditPruneEvery, DeliveryRetention: cfg.WebhookDeliveryRetention,
			ExposureRetention: cfg.ExposureRetention, OutcomeRetention: cfg.OutcomeRetention},
		Prompts: promptstore.Options{
			Metrics: promptstore.NewMetrics(m.registry),
			Limits: promptstore.Limits{AssembleMaxBytes: cfg.AssembleMaxBytes, MaxHistoryTurns: int(cfg.AssembleMaxHistoryTurns),
				DiffMaxBytes: cfg.DiffMaxBytes, DiffMaxLines: int(cfg.DiffMaxLines), DiffCacheBytes: cfg.DiffCacheBytes},
		},
		Releases: release.Options{GuardMetrics: release.NewGuardMetrics(m.registry)},
		Boards: board.Options{Metrics: board.NewMetrics(m.registry), MaxRecords: cfg.BoardMaxRecords, Retention: cfg.BoardRetention, BatchRetention: cfg.BoardBatchRetention,
			DedupeTTL: cfg.BoardDedupeTTL, MaxBoardsPerToken: cfg.BoardMaxPerToken, IdleRetention: cfg.BoardIdleRetention},
		Intents: intent.Options{MaxPerSpace: int(cfg.IntentMaxPerSpace)},
		Sessions: session.Options{
			IdleTTL: cfg.SessionIdleTTL, Retention: cfg.SessionRetention,
			MaxSessionTurns: cfg.SessionMaxTurns, MaxSessionBytes: cfg.SessionMaxBytes, MaxStateKeys: cfg.SessionMaxStateKeys,
			PageBytes: cfg.SessionPageBytes,
		},
	})
	m.store, m.releases, m.sessions, m.events = m.rt.Prompts, m.rt.Releases, m.rt.Sessions, m.rt.Events
	if err := m.store.RepairMirror(ctx); err != nil {
		m.Logger.Warn("repairing the Redis mirror at start failed; the reconciler will catch up", "err", err)
	}
	jobsCtx, stopJobs := context.WithCancel(context.Background())
	m.jobsDone = make(chan struct{})
	m.stopJobs = stopJobs
	go func() { defer close(m.jobsDone); _ = m.rt.Run(jobsCtx) }()

	m.server = api.New(api.Config{
		Logger:          m.Logger,
		Checks:          checks,
		Gatherer:        m.registry,
		Registerer:      m.registry,
		MetricsToken:    cfg.MetricsToken,
		Tokens:          tokens,
		Runtime:         m.rt,
		ImportMaxBytes:  cfg.ImportMaxBytes,
		BundleMaxBytes:  cfg.BundleMaxBytes,
		FeedMetrics:     feedMetrics,
		StreamsPerToken: cfg.StreamsPerToken,
		HeavyPerToken:   cfg.HeavyPerToken,
		HeavyMax:        cfg.HeavyMax,

		Console:               consoleAssets(cfg.Console),
		MCPOff:                !cfg.MCP,
		ConsoleSessionTTL:     cfg.ConsoleSessionTTL,
		ConsoleSecureCookie:   cfg.ConsoleSecureCookie,
		FeedScanMax:           cfg.FeedScanMax,
		AuthFailuresPerMinute: cfg.AuthFailuresPerMinute,
		TrustedProxies:        cfg.TrustedProxies,

		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxConns:          connCap(cfg.MaxConns, m.Logger),
	})
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	m.ln = ln
	go func() { m.served <- m.server.Serve(ln) }()
	return nil
}

// tokenNames are the bootstrap names no managed token may take.
func tokenNames(ts []api.Token) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}

// tokens are the configured tokens, or in embedded mode (no
// PROMPTD_TOKENS, SQLite) the ones generated into the data directory,
// whose path (never the secrets) is logged.
func (m *Main) tokens() ([]api.Token, error) {
	ts := m.Config.Tokens
	if len(ts) == 0 && m.Config.MySQLDSN == "" {
		var (
			path    string
			created bool
			err     error
		)
		if ts, path, created, err = embeddedTokens(m.Config.DataDir); err != nil {
			return nil, err
		}
		if created {
			m.Logger.Info("generated an admin and a runtime token; read them from the file", "tokens_file", path)
		} else {
			m.Logger.Info("using the tokens of the data directory", "tokens_file", path)
		}
	}
	out := make([]api.Token, len(ts))
	for i, t := range ts {
		out[i] = api.Token{Name: t.Name, Role: t.Role, Secret: t.Secret}
	}
	return out, nil
}

// openSQL opens MySQL, or SQLite in the data directory, which it keeps
// private (prepareDataDir).
func (m *Main) openSQL(ctx context.Context) error {
	cfg := sqlstore.Config{MySQLDSN: m.Config.MySQLDSN, Logger: m.Logger}
	if cfg.MySQLDSN == "" {
		path, err := prepareDataDir(m.Config.DataDir, m.Logger)
		if err != nil {
			return err
		}
		cfg.SQLitePath = path
	}
	db, err := sqlstore.Open(ctx, cfg)
	if err != nil {
		return err
	}
	m.db = db
	if err := telemetry.InstrumentSQL(db); err != nil { // when tracing is on
		return err
	}
	if cfg.MySQLDSN == "" {
		return makePrivate(m.Config.DataDir) // the WAL files SQLite just made
	}
	return nil
}

// openRedis builds the client: of one server, or with PROMPTD_REDIS_CLUSTER
// of a Redis Cluster seeded by the URL's nodes. Every call is bounded by
// PROMPTD_REDIS_TIMEOUT (ContextTimeoutEnabled makes call deadlines bound
// reads too). An unreachable Redis does not stop the start: promptd runs
// degraded.
func (m *Main) openRedis(ctx context.Context) error {
	t := m.Config.RedisTimeout
	if m.Config.RedisCluster {
		opt, err := redis.ParseClusterURL(m.Config.RedisURL)
		if err != nil {
			return errors.New("PROMPTD_REDIS_URL: invalid Redis Cluster URL") // checked by loadConfig already
		}
		opt.ContextTimeoutEnabled = true
		opt.ReadTimeout, opt.WriteTimeout = t, t
		opt.DialTimeout = 5 * t
		opt.PoolTimeout = 2 * t
		opt.MaxRetries = 1
		m.redis = redis.NewClusterClient(opt)
	} else {
		opt, err := redis.ParseURL(m.Config.RedisURL)
		if err != nil {
			return errors.New("PROMPTD_REDIS_URL: invalid URL") // checked by loadConfig already
		}
		opt.ContextTimeoutEnabled = true
		opt.ReadTimeout, opt.WriteTimeout = t, t
		opt.DialTimeout = 5 * t
		opt.PoolTimeout = 2 * t
		opt.MaxRetries = 1
		m.redis = redis.NewClient(opt)
	}
	if err := telemetry.InstrumentRedis(m.redis); err != nil { // when tracing is on
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, 6*t)
	defer cancel()
	if err := pingRedis(pctx, m.redis); err != nil {
		m.Logger.Warn("redis unreachable at start; running degraded", "err", err)
	}
	return nil
}

// pingRedis checks that Redis answers: the server, or every master of a
// Redis Cluster (a master that is down takes its slots' locks and mirror
// keys with it, so the instance is degraded; a PING to one random node
// would say so only sometimes).
func pingRedis(ctx context.Context, rdb redis.UniversalClient) error {
	if c, ok := rdb.(*redis.ClusterClient); ok {
		return c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			return node.Ping(ctx).Err()
		})
	}
	return rdb.Ping(ctx).Err()
}

// Addr is the address the server listens on (with the real port when
// Config.Addr asked for port 0).
func (m *Main) Addr() net.Addr {
	if m.ln == nil {
		return nil
	}
	return m.ln.Addr()
}

// Served delivers the server's exit: an error if it stopped on its own.
func (m *Main) Served() <-chan error { return m.served }

// Close stops promptd in order: the server stops accepting and lets
// requests in flight finish (at most shutdownTimeout), the scheduler stops
// and its runs end, the audit batcher writes what it queued, the store
// stops its event subscription, the lock manager releases promptd's own
// leases, then Redis and SQL are closed. It is safe after a failed Open.
func (m *Main) Close(ctx context.Context) error {
	var errs []error
	if m.server != nil {
		sctx, cancel := context.WithTimeout(ctx, shutdownTimeout)
		errs = append(errs, m.server.Shutdown(sctx))
		cancel()
	}
	if m.stopJobs != nil { // the scheduler stops and its runs end
		m.stopJobs()
		select {
		case <-m.jobsDone:
		case <-ctx.Done():
		}
	}
	if m.rt != nil {
		errs = append(errs, m.rt.Close()) // queued events written, event subscription stopped
	}
	if m.locker != nil {
		errs = append(errs, m.locker.Close(ctx))
	}
	m.backend.stop(ctx)
	if m.etcd != nil {
		errs = append(errs, m.etcd.Close())
	}
	if m.redis != nil {
		errs = append(errs, m.redis.Close())
	}
	if m.db != nil {
		errs = append(errs, sqlstore.Close(m.db))
	}
	return errors.Join(errs...)
}
