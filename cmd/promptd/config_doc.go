package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// configDoc is one variable's line of `promptd -h`: its default and what
// it means. README.md's configuration table says the same at length; a
// test checks that the two name the same variables with the same defaults.
type configDoc struct {
	Default, Meaning string
}

var configDocs = map[string]configDoc{
	"PROMPTD_ADDR":                       {"127.0.0.1:8080", "listen address (:0 picks a port; the log says which)"},
	"PROMPTD_DATA_DIR":                   {"./data", "SQLite file and generated tokens (embedded mode)"},
	"PROMPTD_MYSQL_DSN":                  {"empty: SQLite", "go-sql-driver DSN, e.g. user:pw@tcp(127.0.0.1:3306)/promptd"},
	"PROMPTD_REDIS_URL":                  {"empty: in-memory locks, no shared cache", "e.g. redis://127.0.0.1:6379/0"},
	"PROMPTD_REDIS_CLUSTER":              {"false", "true: PROMPTD_REDIS_URL names seed nodes of a Redis Cluster"},
	"PROMPTD_SINGLE_INSTANCE":            {"false", "required to run on MySQL without Redis or etcd (one process only)"},
	"PROMPTD_KEY_PREFIX":                 {"prompt", "Redis key prefix"},
	"PROMPTD_TOKENS":                     {"empty: generated in embedded mode; required with MySQL", "bootstrap tokens, comma-separated name:role:secret"},
	"PROMPTD_METRICS_TOKEN":              {"empty: /metrics open", "bearer token for /metrics"},
	"PROMPTD_INSTANCE_ID":                {"hostname-pid", "shown in leases, audit and logs"},
	"PROMPTD_REDIS_TIMEOUT":              {"100ms", "bound on one Redis call"},
	"PROMPTD_RECONCILE_EVERY":            {"2s", "per-instance cache reconciler period"},
	"PROMPTD_IMPORT_MAX_BYTES":           {"67108864", "body limit of /v1/import"},
	"PROMPTD_SESSION_IDLE_TTL":           {"24h", "default idle TTL; the sweeper closes idle sessions"},
	"PROMPTD_SESSION_RETENTION":          {"720h", "closed sessions are deleted after this"},
	"PROMPTD_IDEMPOTENCY_TTL":            {"24h", "how long stored Idempotency-Key outcomes are kept"},
	"PROMPTD_SESSION_MAX_TURNS":          {"10000", "turns one session may hold"},
	"PROMPTD_SESSION_MAX_BYTES":          {"33554432", "bytes of turns and state entries one session may hold"},
	"PROMPTD_SESSION_MAX_STATE_KEYS":     {"1000", "state entries one session may hold"},
	"PROMPTD_SESSION_PAGE_BYTES":         {"4194304", "bytes of turns in one session page"},
	"PROMPTD_ASSEMBLE_MAX_BYTES":         {"8388608", "largest assembled answer"},
	"PROMPTD_ASSEMBLE_MAX_HISTORY_TURNS": {"1000", "history turns of an assemble, and the most it may ask for"},
	"PROMPTD_DIFF_MAX_BYTES":             {"1048576", "the two configs of a diff together"},
	"PROMPTD_DIFF_MAX_LINES":             {"20000", "their lines together"},
	"PROMPTD_DIFF_CACHE_BYTES":           {"16777216", "in-process cache of computed diffs"},
	"PROMPTD_LOG_LEVEL":                  {"info", "debug, info, warn or error (JSON logs on stdout)"},
	"PROMPTD_EVENT_RETENTION":            {"168h", "how far back a /v1/events reader may resume"},
	"PROMPTD_STREAMS_PER_TOKEN":          {"20", "open event streams and long-polls per token on one instance"},
	"PROMPTD_HEAVY_PER_TOKEN":            {"4", "heavy requests (a bundle that must be built, history, version and record lists, diff, audit) per token in flight on one instance"},
	"PROMPTD_HEAVY_MAX":                  {"16", "heavy requests in flight on one instance (then a request waits up to 2 s, then 503 overloaded)"},
	"PROMPTD_AUTH_FAILURES_PER_MINUTE":   {"600", "failed authentications per client address per minute on one instance before 429 (0: unlimited)"},
	"PROMPTD_TRUSTED_PROXIES":            {"(none)", "addresses or CIDR prefixes of proxies whose X-Forwarded-For names the client"},
	"PROMPTD_AUDIT_RETENTION":            {"2160h", "audit events older than this are deleted"},
	"PROMPTD_AUDIT_PRUNE_EVERY":          {"10m", "how often one replica deletes the audit events past their retention"},
	"PROMPTD_LEASE_MAX_WAITERS":          {"10000", "lease acquires that may wait at once per process"},
	"PROMPTD_LEASE_MAX_PER_TOKEN":        {"1000", "live generic leases one token may hold (429 beyond)"},
	"PROMPTD_LOCK_FENCE_TTL":             {"10m", "how long a Redis fence counter outlives its lock's last grant"},
	"PROMPTD_READ_HEADER_TIMEOUT":        {"5s", "time a connection has to send a request's headers"},
	"PROMPTD_READ_TIMEOUT":               {"30s", "bound on reading a whole request, body included"},
	"PROMPTD_WRITE_TIMEOUT":              {"60s", "bound from a request's headers to the end of its answer"},
	"PROMPTD_IDLE_TIMEOUT":               {"30s", "a kept-alive connection without a new request is closed after this"},
	"PROMPTD_BOARD_MAX_RECORDS":          {"100000", "non-terminal records one board may hold"},
	"PROMPTD_BOARD_RETENTION":            {"720h", "terminal board records are deleted this long after"},
	"PROMPTD_BOARD_DEDUPE_TTL":           {"168h", "how long a board remembers a record's dedupe_key"},
	"PROMPTD_BOARD_MAX_PER_TOKEN":        {"100", "boards one token may have created (422 limit_exceeded beyond)"},
	"PROMPTD_BOARD_IDLE_RETENTION":       {"168h", "a board without records whose definition is older is deleted"},
	"PROMPTD_MAX_CONNS":                  {"16384", "connections served at once (lowered to fit the open-file limit)"},
	"PROMPTD_ETCD_ENDPOINTS":             {"empty: leases on Redis, else in memory", "comma-separated etcd v3 client URLs: every lease on etcd"},
	"PROMPTD_ETCD_USERNAME":              {"empty", "etcd auth user (with PROMPTD_ETCD_PASSWORD)"},
	"PROMPTD_ETCD_PASSWORD":              {"empty", "etcd auth password"},
	"PROMPTD_ETCD_CA_FILE":               {"empty: system roots", "PEM CA of the etcd members' certificates"},
	"PROMPTD_ETCD_CERT_FILE":             {"empty", "etcd client certificate (with PROMPTD_ETCD_KEY_FILE)"},
	"PROMPTD_ETCD_KEY_FILE":              {"empty", "etcd client key"},
	"PROMPTD_ETCD_TIMEOUT":               {"1s", "bound on one etcd call"},
	"PROMPTD_SECRET_KEY":                 {"embedded: generated into PROMPTD_DATA_DIR/secret_key (mode 0600); MySQL: unset, webhooks off", "32 bytes, base64: encrypts webhook secrets at rest"},
	"PROMPTD_WEBHOOK_ALLOW_HTTP":         {"false", "allow http:// webhook URLs"},
	"PROMPTD_WEBHOOK_ALLOW_PRIVATE":      {"false", "allow webhook hosts on loopback and private addresses"},
	"PROMPTD_WEBHOOK_BACKOFF":            {"5s,30s,2m,10m,30m,1h,3h,6h", "webhook retry schedule (full jitter)"},
	"PROMPTD_WEBHOOK_DELIVERY_RETENTION": {"720h", "finished webhook deliveries are deleted after this"},
	"PROMPTD_BUNDLE_MAX_BYTES":           {"33554432", "largest GET /v1/bundle answer"},
	"PROMPTD_EXPOSURE_SERIES_MAX":        {"10000", "series of promptd_exposures_total; past it new label sets count under one series with every label \"other\""},
	"PROMPTD_EXPOSURE_RETENTION":         {"2160h", "exposure minutes older than this are deleted (at least 24h)"},
	"PROMPTD_OUTCOME_RETENTION":          {"2160h", "outcomes of releases that ended longer ago than this are deleted; a running or paused release's never (at least 168h)"},
	"PROMPTD_GUARD_EVERY":                {"10s", "release guards are evaluated this often (one replica)"},
	"PROMPTD_CONSOLE":                    {"true", "serve the web console at /ui/ (false: 404, no session cookies)"},
	"PROMPTD_CONSOLE_SESSION_TTL":        {"12h", "a console login lasts this long (never past its token's expiry)"},
	"PROMPTD_CONSOLE_SECURE_COOKIE":      {"false", "mark the console's session cookie Secure on every login (TLS proxy without X-Forwarded-Proto)"},
	"PROMPTD_FEED_SCAN_MAX":              {"10000", "feed events one long-poll answer looks at (a filter matching little answers with next advanced)"},
}

// printUsage writes `promptd -h`: the commands, then every variable with
// its default and meaning.
func printUsage(w io.Writer) {
	fmt.Fprint(w, `usage: promptd                 serve (configured by the environment below)
       promptd healthcheck     probe a running promptd: exit 0 when /healthz answers 200
                               (--ready: /readyz; --url: base URL, default from PROMPTD_ADDR)
       promptd version         print the version (also --version)
       promptd help            this text (also -h, --help)

Environment (default; meaning). OpenTelemetry's standard OTEL_* variables
configure tracing (off when unset). README.md explains each at length.

`)
	names := slices.Sorted(slices.Values(configVars))
	for _, name := range names {
		d := configDocs[name]
		fmt.Fprintf(w, "  %s (default: %s)\n      %s\n", name, d.Default, d.Meaning)
	}
}

// docDefault is a README default cell as `promptd -h` prints it.
func docDefault(cell string) string { return strings.ReplaceAll(cell, "`", "") }
