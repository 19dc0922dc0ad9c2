package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"github.com/promptd/promptd"
	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/api"
	"github.com/promptd/promptd/board"
	"github.com/promptd/promptd/exposure"
	"github.com/promptd/promptd/intent"
	"github.com/promptd/promptd/leases"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/webhook"
)

// Token roles.
const (
	RoleAdmin   = "admin"
	RoleRuntime = "runtime"
)

// minSecretLen is the shortest token secret accepted.
const minSecretLen = 16

// Token is one entry of PROMPTD_TOKENS.
type Token struct {
	Name   string // shown in logs and audit instead of the secret
	Role   string // RoleAdmin or RoleRuntime
	Secret string
}

// Config is promptd's configuration, read from PROMPTD_* variables
// (api/openapi.yaml, Configuration).
type Config struct {
	Addr             string
	DataDir          string
	MySQLDSN         string
	RedisURL         string
	RedisCluster     bool // RedisURL names seed nodes of a Redis Cluster
	SingleInstance   bool
	KeyPrefix        string
	Tokens           []Token
	MetricsToken     string
	InstanceID       string
	RedisTimeout     time.Duration
	ReconcileEvery   time.Duration
	ImportMaxBytes   int64
	SessionIdleTTL   time.Duration
	SessionRetention time.Duration
	IdempotencyTTL   time.Duration
	LogLevel         slog.Level
	AuditRetention   time.Duration // audit events older than this are deleted
	AuditPruneEvery  time.Duration // how often one replica deletes them
	LeaseMaxWaiters  int           // lease acquires waiting at once per process
	LeaseMaxPerToken int           // live generic leases one token may hold
	LockFenceTTL     time.Duration // how long a Redis fence counter outlives its last grant
	EventRetention   time.Duration // how far back a change-feed reader may resume
	StreamsPerToken  int           // open event streams and waits per token per instance
	HeavyPerToken    int           // heavy requests in flight per token per instance
	HeavyMax         int           // heavy requests in flight per instance
	GuardEvery       time.Duration // release guards are evaluated this often (one replica)

	// Limits on what one session holds and one read may cost.
	SessionMaxTurns         int64
	SessionMaxBytes         int64
	SessionMaxStateKeys     int64
	SessionPageBytes        int64
	AssembleMaxBytes        int64
	AssembleMaxHistoryTurns int64
	DiffMaxBytes            int64
	DiffMaxLines            int64
	DiffCacheBytes          int64
	// HTTP connection limits (api.Config has what each bounds).
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	MaxConns          int
	// Boards: non-terminal records per board, how long terminal records
	// and dedupe keys are kept, boards per creating token, how long an
	// empty board is kept.
	BoardMaxRecords     int64
	BoardRetention      time.Duration
	BoardBatchRetention time.Duration
	IntentMaxPerSpace   int64
	BoardDedupeTTL      time.Duration
	BoardMaxPerToken    int64
	BoardIdleRetention  time.Duration
	// Leases on etcd (etcd.go): every lease goes through it when set.
	Etcd EtcdConfig
	// Webhooks (api/openapi.yaml, Webhooks).
	WebhookAllowHTTP    bool
	WebhookAllowPrivate bool
	SecretKey           []byte          // nil: generated into the data dir (embedded) or webhooks off (MySQL)
	WebhookBackoff      []time.Duration // the retry schedule
	// WebhookDeliveryRetention: delivered and failed deliveries older
	// than this are deleted.
	WebhookDeliveryRetention time.Duration
	// BundleMaxBytes is the largest GET /v1/bundle answer.
	BundleMaxBytes int64
	// ExposureSeriesMax caps promptd_exposures_total's series.
	ExposureSeriesMax int
	// ExposureRetention: exposure minutes older than this are deleted;
	// OutcomeRetention: outcomes of releases that ended longer ago than
	// this are deleted (a running or paused release's, never).
	ExposureRetention time.Duration
	OutcomeRetention  time.Duration
	// The web console at /ui/ (docs/console.md): on by default; its
	// logins last ConsoleSessionTTL; ConsoleSecureCookie marks the cookie
	// Secure on every login.
	Console             bool
	MCP                 bool
	ConsoleSessionTTL   time.Duration
	ConsoleSecureCookie bool
	// FeedScanMax bounds the feed events one long-poll answer looks at.
	FeedScanMax int
	// AuthFailuresPerMinute is the failed authentications a client address
	// may make per minute per instance; -1: unlimited.
	AuthFailuresPerMinute int
	// TrustedProxies are the proxies whose X-Forwarded-For names the client.
	TrustedProxies []netip.Prefix
}

// loadConfig reads and validates the configuration. It reports every
// problem at once; no message contains a secret.
func loadConfig(getenv func(string) string) (Config, error) {
	return readConfig(&envReader{getenv: getenv})
}

// readConfig is the configuration table: each variable is read once, by
// one call that names it, its default, its parser (the method) and its
// meaning. `promptd -h`, the list of variables promptd reads and the
// table of docs/configuration.md (checked by a test) all come from it
// (configTable).
func readConfig(e *envReader) (Config, error) {
	c := Config{
		Addr:             e.str("PROMPTD_ADDR", defaultAddr, "listen address (:0 picks a port; the log says which)"),
		DataDir:          e.str("PROMPTD_DATA_DIR", "./data", "SQLite file and generated tokens (embedded mode)"),
		MySQLDSN:         e.str("PROMPTD_MYSQL_DSN", "", "go-sql-driver DSN, e.g. user:pw@tcp(127.0.0.1:3306)/promptd", "empty: SQLite"),
		RedisURL:         e.str("PROMPTD_REDIS_URL", "", "e.g. redis://127.0.0.1:6379/0", "empty: in-memory locks, no shared cache"),
		RedisCluster:     e.boolean("PROMPTD_REDIS_CLUSTER", false, "true: PROMPTD_REDIS_URL names seed nodes of a Redis Cluster"),
		SingleInstance:   e.boolean("PROMPTD_SINGLE_INSTANCE", false, "required to run on MySQL without Redis or etcd (one process only)"),
		KeyPrefix:        e.str("PROMPTD_KEY_PREFIX", "prompt", "Redis key prefix"),
		MetricsToken:     e.str("PROMPTD_METRICS_TOKEN", "", "bearer token for /metrics", "empty: /metrics open"),
		InstanceID:       e.str("PROMPTD_INSTANCE_ID", "", "shown in leases, audit and logs", "hostname-pid"),
		RedisTimeout:     e.duration("PROMPTD_REDIS_TIMEOUT", 100*time.Millisecond, "bound on one Redis call"),
		ReconcileEvery:   e.duration("PROMPTD_RECONCILE_EVERY", promptd.DefaultReconcileEvery, "per-instance cache reconciler period"),
		ImportMaxBytes:   e.bytes("PROMPTD_IMPORT_MAX_BYTES", 64<<20, "body limit of /v1/import"),
		SessionIdleTTL:   e.duration("PROMPTD_SESSION_IDLE_TTL", 24*time.Hour, "default idle TTL; the sweeper closes idle sessions"),
		SessionRetention: e.duration("PROMPTD_SESSION_RETENTION", 720*time.Hour, "closed sessions are deleted after this"),
		IdempotencyTTL:   e.duration("PROMPTD_IDEMPOTENCY_TTL", 24*time.Hour, "how long stored Idempotency-Key outcomes are kept"),
		LogLevel:         e.level("PROMPTD_LOG_LEVEL", slog.LevelInfo, "debug, info, warn or error (JSON logs on stdout)"),
		AuditRetention:   e.duration("PROMPTD_AUDIT_RETENTION", promptd.DefaultAuditRetention, "audit events older than this are deleted"),
		AuditPruneEvery:  e.duration("PROMPTD_AUDIT_PRUNE_EVERY", promptd.DefaultAuditPruneEvery, "how often one replica deletes the audit events past their retention"),
		LeaseMaxWaiters:  int(e.count("PROMPTD_LEASE_MAX_WAITERS", int64(locks.DefaultMaxWaiters), "lease acquires that may wait at once per process")),
		LeaseMaxPerToken: int(e.count("PROMPTD_LEASE_MAX_PER_TOKEN", leases.DefaultMaxPerOwner, "live generic leases one token may hold (429 beyond)")),
		LockFenceTTL:     e.duration("PROMPTD_LOCK_FENCE_TTL", locks.DefaultFenceTTL, "how long a Redis fence counter outlives its lock's last grant"),

		SessionMaxTurns:         e.count("PROMPTD_SESSION_MAX_TURNS", 10000, "turns one session may hold"),
		SessionMaxBytes:         e.bytes("PROMPTD_SESSION_MAX_BYTES", 32<<20, "bytes of turns and state entries one session may hold"),
		SessionMaxStateKeys:     e.count("PROMPTD_SESSION_MAX_STATE_KEYS", 1000, "state entries one session may hold"),
		SessionPageBytes:        e.bytes("PROMPTD_SESSION_PAGE_BYTES", 4<<20, "bytes of turns in one session page"),
		AssembleMaxBytes:        e.bytes("PROMPTD_ASSEMBLE_MAX_BYTES", 8<<20, "largest assembled answer"),
		AssembleMaxHistoryTurns: e.count("PROMPTD_ASSEMBLE_MAX_HISTORY_TURNS", 1000, "history turns of an assemble, and the most it may ask for"),
		DiffMaxBytes:            e.bytes("PROMPTD_DIFF_MAX_BYTES", 1<<20, "the two configs of a diff together"),
		DiffMaxLines:            e.count("PROMPTD_DIFF_MAX_LINES", 20000, "their lines together"),
		DiffCacheBytes:          e.bytes("PROMPTD_DIFF_CACHE_BYTES", 16<<20, "in-process cache of computed diffs"),
	}
	c.EventRetention = e.duration("PROMPTD_EVENT_RETENTION", 168*time.Hour, "how far back a /v1/events reader may resume")
	if c.AuditRetention < c.EventRetention {
		// The feed's events are audit rows: pruning them earlier than a
		// reader may resume would make resumable positions lose events.
		e.check("PROMPTD_AUDIT_RETENTION", fmt.Errorf("%s is shorter than PROMPTD_EVENT_RETENTION (%s): the change feed's events are audit events, kept at least as long as a reader may resume",
			c.AuditRetention, c.EventRetention))
	}
	c.GuardEvery = e.duration("PROMPTD_GUARD_EVERY", promptd.DefaultGuardEvery, "release guards are evaluated this often (one replica)")
	c.StreamsPerToken = int(e.count("PROMPTD_STREAMS_PER_TOKEN", api.DefaultStreamsPerToken, "open event streams and long-polls per token on one instance"))
	c.HeavyPerToken = int(e.count("PROMPTD_HEAVY_PER_TOKEN", api.DefaultHeavyPerToken, "heavy requests (a bundle that must be built, history, version and record lists, diff, audit) per token in flight on one instance"))
	c.HeavyMax = int(e.count("PROMPTD_HEAVY_MAX", api.DefaultHeavyMax, "heavy requests in flight on one instance (then a request waits up to 2 s, then 503 overloaded)"))
	c.ReadHeaderTimeout = e.duration("PROMPTD_READ_HEADER_TIMEOUT", api.DefaultReadHeaderTimeout, "time a connection has to send a request's headers")
	c.ReadTimeout = e.duration("PROMPTD_READ_TIMEOUT", api.DefaultReadTimeout, "bound on reading a whole request, body included")
	c.WriteTimeout = e.duration("PROMPTD_WRITE_TIMEOUT", api.DefaultWriteTimeout, "bound from a request's headers to the end of its answer")
	c.IdleTimeout = e.duration("PROMPTD_IDLE_TIMEOUT", api.DefaultIdleTimeout, "a kept-alive connection without a new request is closed after this")
	c.MaxConns = int(e.count("PROMPTD_MAX_CONNS", api.DefaultMaxConns, "connections served at once (lowered to fit the open-file limit)"))
	c.BoardMaxRecords = e.count("PROMPTD_BOARD_MAX_RECORDS", board.DefaultMaxRecords, "non-terminal records one board may hold")
	c.BoardRetention = e.duration("PROMPTD_BOARD_RETENTION", board.DefaultRetention, "terminal board records are deleted this long after")
	c.BoardBatchRetention = e.duration("PROMPTD_BOARD_BATCH_RETENTION", board.DefaultBatchRetain, "applied board batches (their commit proofs) are kept this long")
	c.IntentMaxPerSpace = e.count("PROMPTD_INTENT_MAX_PER_SPACE", intent.DefaultMaxPerSpace, "live intents in one space (all agent scopes; each board)")
	c.BoardDedupeTTL = e.duration("PROMPTD_BOARD_DEDUPE_TTL", board.DefaultDedupeTTL, "how long a board remembers a record's dedupe_key")
	c.BoardMaxPerToken = e.count("PROMPTD_BOARD_MAX_PER_TOKEN", board.DefaultMaxBoardsPerToken, "boards one token may have created (422 limit_exceeded beyond)")
	c.BoardIdleRetention = e.duration("PROMPTD_BOARD_IDLE_RETENTION", board.DefaultIdleRetention, "a board without records whose definition is older is deleted")
	c.Etcd = readEtcdConfig(e)
	c.WebhookAllowHTTP = e.boolean("PROMPTD_WEBHOOK_ALLOW_HTTP", false, "allow http:// webhook URLs")
	c.WebhookAllowPrivate = e.boolean("PROMPTD_WEBHOOK_ALLOW_PRIVATE", false, "allow webhook hosts on loopback and private addresses")
	if k := e.str("PROMPTD_SECRET_KEY", "", "32 bytes, base64: encrypts webhook secrets at rest", "embedded: generated into PROMPTD_DATA_DIR/secret_key (mode 0600); MySQL: unset, webhooks off"); k != "" {
		key, err := webhook.ParseKey(k)
		e.check("PROMPTD_SECRET_KEY", err)
		c.SecretKey = key
	}
	c.WebhookBackoff = e.durations("PROMPTD_WEBHOOK_BACKOFF", webhook.DefaultBackoff, "webhook retry schedule (full jitter)")
	c.WebhookDeliveryRetention = e.duration("PROMPTD_WEBHOOK_DELIVERY_RETENTION", promptd.DefaultDeliveryRetention, "finished webhook deliveries are deleted after this")
	c.BundleMaxBytes = e.bytes("PROMPTD_BUNDLE_MAX_BYTES", api.DefaultBundleMaxBytes, "largest GET /v1/bundle answer")
	c.ExposureSeriesMax = int(e.count("PROMPTD_EXPOSURE_SERIES_MAX", exposure.DefaultSeries, "series of promptd_exposures_total; past it new label sets count under one series with every label \"other\""))
	c.ExposureRetention = e.duration("PROMPTD_EXPOSURE_RETENTION", exposure.DefaultRetention, "exposure minutes older than this are deleted (at least 24h)")
	if c.ExposureRetention < exposure.MinExposureRetention {
		// a report may still add to a minute this old
		e.check("PROMPTD_EXPOSURE_RETENTION", fmt.Errorf("%s is shorter than %s, how old a reported exposure may be",
			c.ExposureRetention, exposure.MinExposureRetention))
	}
	c.OutcomeRetention = e.duration("PROMPTD_OUTCOME_RETENTION", exposure.DefaultRetention, "outcomes of releases that ended longer ago than this are deleted; a running or paused release's never (at least 168h)")
	if c.OutcomeRetention < exposure.MinOutcomeRetention {
		e.check("PROMPTD_OUTCOME_RETENTION", fmt.Errorf("%s is shorter than %s, the outcome ids' dedupe window",
			c.OutcomeRetention, exposure.MinOutcomeRetention))
	}
	c.Console = e.boolean("PROMPTD_CONSOLE", true, "serve the web console at /ui/ (false: 404, no session cookies)")
	c.MCP = e.boolean("PROMPTD_MCP", true, "serve the MCP server at /v1/mcp/{env} (false: 404 not_found)")
	c.ConsoleSessionTTL = e.duration("PROMPTD_CONSOLE_SESSION_TTL", access.DefaultSessionTTL, "a console login lasts this long (never past its token's expiry)")
	c.ConsoleSecureCookie = e.boolean("PROMPTD_CONSOLE_SECURE_COOKIE", false, "mark the console's session cookie Secure on every login (TLS proxy without X-Forwarded-Proto)")
	c.FeedScanMax = int(e.count("PROMPTD_FEED_SCAN_MAX", api.DefaultFeedScanMax, "feed events one long-poll answer looks at (a filter matching little answers with next advanced)"))
	c.AuthFailuresPerMinute = int(e.countOrOff("PROMPTD_AUTH_FAILURES_PER_MINUTE", api.DefaultAuthFailuresPerMinute, "failed authentications per client address per minute on one instance before 429 (0: unlimited)"))
	c.TrustedProxies = e.prefixes("PROMPTD_TRUSTED_PROXIES", "addresses or CIDR prefixes of proxies whose X-Forwarded-For names the client", "(none)")
	e.check("PROMPTD_METRICS_TOKEN", checkSecret(c.MetricsToken))
	tokens, err := parseTokens(e.str("PROMPTD_TOKENS", "", "bootstrap tokens, comma-separated name:role:secret", "empty: generated in embedded mode; required with MySQL"))
	e.check("PROMPTD_TOKENS", err)
	c.Tokens = tokens
	if c.InstanceID == "" {
		c.InstanceID = defaultInstanceID()
	}
	e.check("PROMPTD_ADDR", checkAddr(c.Addr))
	e.check("PROMPTD_MYSQL_DSN", checkDSN(c.MySQLDSN))
	e.check("PROMPTD_REDIS_URL", checkRedisURL(c.RedisURL, c.RedisCluster))
	e.check("PROMPTD_KEY_PREFIX", checkKeyPrefix(c.KeyPrefix))
	e.check("PROMPTD_INSTANCE_ID", checkInstanceID(c.InstanceID))
	if c.DataDir == "" && c.MySQLDSN == "" {
		e.check("PROMPTD_DATA_DIR", errors.New("must not be empty without PROMPTD_MYSQL_DSN"))
	}
	if c.RedisCluster && c.RedisURL == "" {
		e.errs = append(e.errs, errors.New("PROMPTD_REDIS_CLUSTER is set without PROMPTD_REDIS_URL: "+
			"name the cluster's seed nodes, e.g. redis://10.0.0.1:6379?addr=10.0.0.2:6379&addr=10.0.0.3:6379"))
	}
	if c.MySQLDSN != "" && c.RedisURL == "" && !c.SingleInstance && !c.Etcd.enabled() {
		e.errs = append(e.errs, errors.New("PROMPTD_MYSQL_DSN is set without PROMPTD_REDIS_URL: "+
			"in-memory locks are only safe for one process; set PROMPTD_REDIS_URL or PROMPTD_ETCD_ENDPOINTS, "+
			"or PROMPTD_SINGLE_INSTANCE=true if exactly one promptd uses this database"))
	}
	if c.MySQLDSN != "" && len(c.Tokens) == 0 {
		e.errs = append(e.errs, errors.New("PROMPTD_TOKENS is required with PROMPTD_MYSQL_DSN: "+
			"every replica must accept the same tokens"))
	}
	return c, errors.Join(e.errs...)
}

// envReader reads variables with defaults and collects parse errors.
// With docs set it also records each variable it reads: its name, its
// default as `promptd -h` shows it (shown, where given, for a default
// that is not a value, such as "empty: SQLite") and its meaning.
type envReader struct {
	getenv func(string) string
	errs   []error
	docs   *[]configVar
}

// configVar is one row of the configuration table.
type configVar struct{ Name, Default, Meaning string }

func (e *envReader) doc(name, def, meaning string, shown []string) {
	if e.docs == nil {
		return
	}
	if len(shown) > 0 {
		def = shown[0]
	}
	*e.docs = append(*e.docs, configVar{Name: name, Default: def, Meaning: meaning})
}

// raw is a variable's value, trimmed ("" when unset).
func (e *envReader) raw(name string) string { return strings.TrimSpace(e.getenv(name)) }

// showDuration is d as the table shows it: 24h, 10m, 100ms.
func showDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func (e *envReader) check(name string, err error) {
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s: %w", name, err))
	}
}

func (e *envReader) str(name, def, meaning string, shown ...string) string {
	e.doc(name, def, meaning, shown)
	if v := e.raw(name); v != "" {
		return v
	}
	return def
}

func (e *envReader) duration(name string, def time.Duration, meaning string, shown ...string) time.Duration {
	e.doc(name, showDuration(def), meaning, shown)
	v := e.raw(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		e.check(name, fmt.Errorf("invalid duration %q (use Go syntax: 100ms, 2s, 24h)", v))
	case d <= 0:
		e.check(name, fmt.Errorf("duration %q must be positive", v))
	}
	return d
}

// durations reads a comma-separated list of positive durations.
func (e *envReader) durations(name string, def []time.Duration, meaning string, shown ...string) []time.Duration {
	ds := make([]string, len(def))
	for i, d := range def {
		ds[i] = showDuration(d)
	}
	e.doc(name, strings.Join(ds, ","), meaning, shown)
	v := e.raw(name)
	if v == "" {
		return def
	}
	var out []time.Duration
	for _, part := range strings.Split(v, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(part))
		if err != nil || d <= 0 {
			e.check(name, fmt.Errorf("invalid duration %q in the list (use Go syntax: 5s,30s,2m)", part))
			return def
		}
		out = append(out, d)
	}
	if len(out) > 32 {
		e.check(name, errors.New("at most 32 retries"))
	}
	return out
}

// prefixes reads a comma-separated list of CIDR prefixes or addresses (an
// address is its own /32 or /128).
func (e *envReader) prefixes(name, meaning string, shown ...string) []netip.Prefix {
	e.doc(name, "", meaning, shown)
	v := e.raw(name)
	if strings.TrimSpace(v) == "" {
		return nil
	}
	var out []netip.Prefix
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		p, err := netip.ParsePrefix(part)
		if err != nil {
			a, aerr := netip.ParseAddr(part)
			if aerr != nil {
				e.check(name, fmt.Errorf("invalid address or CIDR prefix %q in the list (10.0.0.0/8,192.0.2.7)", part))
				return nil
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p.Masked())
	}
	return out
}

func (e *envReader) boolean(name string, def bool, meaning string, shown ...string) bool {
	e.doc(name, strconv.FormatBool(def), meaning, shown)
	v := e.raw(name)
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		e.check(name, fmt.Errorf("invalid boolean %q (use true or false)", v))
	}
	return b
}

func (e *envReader) bytes(name string, def int64, meaning string, shown ...string) int64 {
	e.doc(name, strconv.FormatInt(def, 10), meaning, shown)
	v := e.raw(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		e.check(name, fmt.Errorf("invalid size %q (a positive number of bytes)", v))
	}
	return n
}

func (e *envReader) count(name string, def int64, meaning string, shown ...string) int64 {
	e.doc(name, strconv.FormatInt(def, 10), meaning, shown)
	v := e.raw(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n <= 0 {
		e.check(name, fmt.Errorf("invalid count %q (a positive whole number)", v))
	}
	return n
}

// countOrOff is count where 0 is also allowed, to turn a limit off; it
// returns -1 for 0.
func (e *envReader) countOrOff(name string, def int64, meaning string, shown ...string) int64 {
	if e.raw(name) == "0" {
		e.doc(name, strconv.FormatInt(def, 10), meaning, shown)
		return -1
	}
	return e.count(name, def, meaning, shown...)
}

func (e *envReader) level(name string, def slog.Level, meaning string, shown ...string) slog.Level {
	e.doc(name, strings.ToLower(def.String()), meaning, shown)
	v := e.raw(name)
	if v == "" {
		return def
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(v)); err != nil {
		e.check(name, fmt.Errorf("invalid level %q (debug, info, warn or error)", v))
	}
	return l
}

// parseTokens parses "name:role:secret,...". Errors name the entry by its
// position and name, never by its secret.
func parseTokens(s string) ([]Token, error) {
	if s == "" {
		return nil, nil
	}
	var tokens []Token
	names, secrets := map[string]bool{}, map[string]bool{}
	for i, entry := range strings.Split(s, ",") {
		parts := strings.SplitN(strings.TrimSpace(entry), ":", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("entry %d: want name:role:secret", i+1)
		}
		t := Token{Name: parts[0], Role: parts[1], Secret: parts[2]}
		switch {
		case !validName(t.Name):
			return nil, fmt.Errorf("entry %d: name must be 1..64 characters of [A-Za-z0-9._-]", i+1)
		case t.Role != RoleAdmin && t.Role != RoleRuntime:
			return nil, fmt.Errorf("token %q: role must be %s or %s", t.Name, RoleAdmin, RoleRuntime)
		case len(t.Secret) < minSecretLen || strings.IndexFunc(t.Secret, unicode.IsSpace) >= 0:
			return nil, fmt.Errorf("token %q: secret must be at least %d characters, without spaces", t.Name, minSecretLen)
		case names[t.Name]:
			return nil, fmt.Errorf("token %q is defined twice", t.Name)
		case secrets[t.Secret]:
			return nil, fmt.Errorf("token %q: its secret is also another token's", t.Name)
		}
		names[t.Name], secrets[t.Secret] = true, true
		tokens = append(tokens, t)
	}
	return tokens, nil
}

// checkSecret holds a secret other than PROMPTD_TOKENS' (the metrics
// token) to the same rule as theirs; empty means not set.
func checkSecret(s string) error {
	if s != "" && (len(s) < minSecretLen || strings.IndexFunc(s, unicode.IsSpace) >= 0) {
		return fmt.Errorf("must be at least %d characters, without spaces", minSecretLen)
	}
	return nil
}

func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func checkAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("invalid listen address %q (want host:port)", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("invalid port in %q", addr)
	}
	return nil
}

func checkDSN(dsn string) error {
	if dsn == "" {
		return nil
	}
	if _, err := mysql.ParseDSN(dsn); err != nil {
		return err // the driver's messages never echo the DSN
	}
	return nil
}

// checkRedisURL parses u as openRedis will: a single server's URL, or with
// cluster the seed nodes of a Redis Cluster (the URL's host plus
// ?addr=host:port&addr=...).
func checkRedisURL(u string, cluster bool) error {
	if u == "" {
		return nil
	}
	var err error
	if cluster {
		_, err = redis.ParseClusterURL(u)
	} else {
		_, err = redis.ParseURL(u)
	}
	p, perr := url.Parse(u)
	switch {
	case perr == nil && !cluster && p.Query().Has("addr"):
		return errors.New("addr= names Redis Cluster seed nodes: set PROMPTD_REDIS_CLUSTER=true, or drop addr=")
	case err != nil:
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error quotes the URL, password included
		}
		return fmt.Errorf("invalid Redis URL: %v", err)
	case cluster && strings.Trim(p.Path, "/") != "" && strings.Trim(p.Path, "/") != "0":
		return fmt.Errorf("a Redis Cluster has only database 0; the URL names database %q", strings.Trim(p.Path, "/"))
	}
	return nil
}

// checkKeyPrefix keeps the prefix out of Redis Cluster hash tags (no
// braces anywhere) and out of the key separator (no ':' at the ends).
func checkKeyPrefix(p string) error {
	switch {
	case len(p) > 64:
		return errors.New("must be at most 64 characters")
	case strings.ContainsAny(p, "{}"):
		return fmt.Errorf("%q must not contain '{' or '}' (Redis Cluster hash tags)", p)
	case strings.HasPrefix(p, ":") || strings.HasSuffix(p, ":"):
		return fmt.Errorf("%q must not start or end with ':'", p)
	case strings.IndexFunc(p, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return fmt.Errorf("%q must not contain spaces or control characters", p)
	}
	return nil
}

func checkInstanceID(id string) error {
	if len(id) > 256 || strings.IndexFunc(id, unicode.IsControl) >= 0 {
		return errors.New("must be at most 256 bytes of printable text")
	}
	return nil
}

func defaultInstanceID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "promptd"
	}
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}
