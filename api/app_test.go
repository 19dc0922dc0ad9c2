package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	"github.com/promptd/promptd"
	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/api"
	"github.com/promptd/promptd/api/idempotency"
	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/board"
	"github.com/promptd/promptd/exposure"
	"github.com/promptd/promptd/intent"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/session"
	"github.com/promptd/promptd/sqlstore"
	"github.com/promptd/promptd/webhook"
)

// Test tokens: "ops" is an admin, "agent" a runtime.
const (
	admin   = "ops-admin-secret-0123456789"
	runtime = "agent-runtime-secret-0123456789"
)

var testTokens = []api.Token{
	{Name: "ops", Role: api.RoleAdmin, Secret: admin},
	{Name: "agent", Role: api.RoleRuntime, Secret: runtime},
}

func migrations() []sqlstore.Migration {
	ms := append(audit.Migrations(), promptstore.Migrations()...)
	ms = append(ms, promptstore.DraftMigrations()...)
	ms = append(ms, release.Migrations()...)
	ms = append(ms, session.Migrations()...)
	ms = append(ms, intent.Migrations()...)
	ms = append(ms, board.Migrations()...)
	ms = append(ms, exposure.Migrations()...)
	ms = append(ms, access.Migrations()...)
	ms = append(ms, webhook.Migrations()...)
	return append(ms, idempotency.Migrations()...)
}

// app is an api.Server over a real prompt store, with releases, sessions
// and the composed resolver (session pin -> release arm -> env pointer),
// wired as cmd/promptd wires them.
type app struct {
	t        *testing.T
	db       *gorm.DB
	store    *promptstore.Store
	releases *release.Service
	sessions *session.Service
	events   *audit.Batcher
	h        http.Handler
	srv      *api.Server
	rt       *promptd.Runtime
	logs     *syncBuffer
	locker   locks.Locker
	keys     locks.Keys
}

func newApp(t *testing.T, db *gorm.DB, mod ...func(*api.Config)) *app {
	t.Helper()
	return newAppWith(t, db, promptstore.Options{Instance: "test-1"}, mod...)
}

// newAppWith is newApp over a store with the given options (a Redis
// locker, say), wired as cmd/promptd wires it (promptd.New).
func newAppWith(t *testing.T, db *gorm.DB, o promptstore.Options, mod ...func(*api.Config)) *app {
	t.Helper()
	logs := &syncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	locker, keys := o.Locker, o.Keys
	if locker == nil {
		locker = locks.NewMemory(locks.Options{Holder: o.Instance})
	}
	rt := promptd.New(db, promptd.Options{Instance: o.Instance, Logger: logger, Locker: locker, Keys: keys,
		Prompts: o, EventFlush: 20 * time.Millisecond, Access: access.Options{Reserved: []string{"ops", "agent"}}})
	t.Cleanup(func() { _ = rt.Close() })
	reg := prometheus.NewRegistry()
	cfg := api.Config{
		Logger:     logger,
		Registerer: reg, Gatherer: reg,
		Tokens:  testTokens,
		Runtime: rt,
	}
	for _, m := range mod {
		m(&cfg)
	}
	srv := api.New(cfg)
	return &app{t: t, db: db, rt: rt, store: rt.Prompts, releases: rt.Releases, sessions: rt.Sessions, events: rt.Events,
		h: srv.Handler(), srv: srv, logs: logs, locker: locker, keys: keys}
}

// redisApp is an app whose locks live in the shared test Redis, under a
// key prefix of its own.
func redisApp(t *testing.T, db *gorm.DB, mod ...func(*api.Config)) *app {
	t.Helper()
	rdb := testenv.RedisClient(t)
	keys := locks.Keys{Prefix: fmt.Sprintf("api-%d", time.Now().UnixNano())}
	locker := locks.NewRedis(rdb, locks.RedisOptions{Keys: keys}, locks.Options{Holder: "test-1"})
	t.Cleanup(func() { _ = locker.Close(context.Background()) })
	return newAppWith(t, db, promptstore.Options{Instance: "test-1", Locker: locker, Keys: keys}, mod...)
}

// sqliteApp is an app over a fresh SQLite file.
func sqliteApp(t *testing.T, mod ...func(*api.Config)) *app {
	t.Helper()
	db := testenv.OpenDB(t, sqlstore.Config{SQLitePath: filepath.Join(t.TempDir(), "promptd.db")}, migrations())
	return newApp(t, db, mod...)
}

// forEachDialect runs f with an app on SQLite and on MariaDB.
func forEachDialect(t *testing.T, f func(t *testing.T, a *app)) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) { f(t, newApp(t, db)) })
}

// req builds a request; headers come in name, value pairs.
func req(method, path, token, body string, headers ...string) *http.Request {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	rq := httptest.NewRequest(method, path, r)
	if token != "" {
		rq.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		rq.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		rq.Header.Add(headers[i], headers[i+1])
	}
	ctx, cancel := context.WithTimeout(rq.Context(), 60*time.Second)
	_ = cancel // the request ends with the test
	return rq.WithContext(ctx)
}

func (a *app) do(method, path, token, body string, headers ...string) *httptest.ResponseRecorder {
	a.t.Helper()
	return do(a.t, a.h, req(method, path, token, body, headers...))
}

// ok asserts status and decodes a JSON answer into a map.
func (a *app) ok(rec *httptest.ResponseRecorder, status int) map[string]any {
	a.t.Helper()
	if rec.Code != status {
		a.t.Fatalf("status = %d, want %d; body %s", rec.Code, status, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		a.t.Fatalf("Content-Type = %q", ct)
	}
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		a.t.Fatalf("body %q: %v", rec.Body, err)
	}
	return m
}

// exampleConfig is the HTTP contract's (api/openapi.yaml) example config.
const exampleConfig = `{"system": "You are {{persona}} for {{company}}.",
 "tools": [{"type": "function", "function": {"name": "lookup_order", "description": "Find an order", "parameters": {"type": "object"}}}],
 "skills": [{"name": "refunds", "instructions": "Refunds within {{refund_days}} days."}],
 "memory": ["Customer prefers email."],
 "model": {"name": "gpt-4o", "temperature": 0.2},
 "variables": {"persona": {"required": true}, "company": {"default": "ACME"}, "refund_days": {"default": "30"}}}`

// createVersion creates a version over HTTP and returns its number.
func (a *app) createVersion(agent string, base int, system string) int {
	a.t.Helper()
	body := fmt.Sprintf(`{"base_version": %d, "config": {"system": %q}, "message": "v%d"}`, base, system, base+1)
	m := a.ok(a.do("POST", "/v1/agents/"+agent+"/versions", admin, body), 201)
	return int(m["version"].(float64))
}

// publish points env at version, creating the pointer when needed.
func (a *app) publish(agent, env string, version int, expected int64) map[string]any {
	a.t.Helper()
	status := 200
	if expected == 0 {
		status = 201
	}
	return a.ok(a.do("PUT", "/v1/agents/"+agent+"/envs/"+env, admin,
		fmt.Sprintf(`{"version": %d, "expected_revision": %d}`, version, expected)), status)
}

// counts are the row counts of the tables a write changes.
type counts struct{ versions, agents, pointers, moves, revocations, audit int64 }

func (a *app) counts() counts {
	a.t.Helper()
	var c counts
	for _, q := range []struct {
		table string
		dst   *int64
	}{{"prompt_versions", &c.versions}, {"prompt_agents", &c.agents}, {"prompt_env_pointers", &c.pointers},
		{"prompt_pointer_moves", &c.moves}, {"prompt_revocations", &c.revocations}, {"audit_events", &c.audit}} {
		if err := a.db.Raw("SELECT COUNT(*) FROM " + q.table).Scan(q.dst).Error; err != nil {
			a.t.Fatal(err)
		}
	}
	return c
}

// pointerRevision is the env pointer's revision in SQL (0: none).
func (a *app) pointerRevision(agent, env string) int64 {
	var rev int64
	a.db.Raw(`SELECT revision FROM prompt_env_pointers WHERE agent = ? AND env = ?`, agent, env).Scan(&rev)
	return rev
}

type apiConfig = api.Config
