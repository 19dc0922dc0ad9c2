package api_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"

	"github.com/promptd/promptd/api/client"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/sqlstore"
	"github.com/promptd/promptd/telemetry"
)

// traced installs an SDK tracer provider that keeps every span in memory
// (synchronously) for the test, and restores the no-op after it.
func traced(t *testing.T) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	telemetry.Install(tp)
	t.Cleanup(func() { telemetry.Uninstall(); _ = tp.Shutdown(context.Background()) })
	return tp, exp
}

// forEachTracedLocker is forEachLocker with tracing on: installed before
// the app is built (so with the tracing middleware) and SQL instrumented.
func forEachTracedLocker(t *testing.T, f func(t *testing.T, a *app, tp *sdktrace.TracerProvider, exp *tracetest.InMemoryExporter)) {
	t.Run("memory", func(t *testing.T) {
		tp, exp := traced(t)
		db := testenv.OpenDB(t, sqlstore.Config{SQLitePath: filepath.Join(t.TempDir(), "promptd.db")}, migrations())
		if err := telemetry.InstrumentSQL(db); err != nil {
			t.Fatal(err)
		}
		f(t, newApp(t, db), tp, exp)
	})
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		t.Run("redis", func(t *testing.T) {
			tp, exp := traced(t)
			if err := telemetry.InstrumentSQL(db); err != nil {
				t.Fatal(err)
			}
			f(t, redisApp(t, db), tp, exp)
		})
	})
}

// spansOf are the exported spans of one trace.
func spansOf(exp *tracetest.InMemoryExporter, id trace.TraceID) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range exp.GetSpans() {
		if s.SpanContext.TraceID() == id {
			out = append(out, s)
		}
	}
	return out
}

func attrOf(s tracetest.SpanStub, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func named(ss tracetest.SpanStubs, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range ss {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// auditByTrace polls GET /v1/audit?trace_id= until an event of action
// shows (lease events are written asynchronously, in batches).
func (a *app) auditByTrace(traceID, action string) map[string]any {
	a.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		m := a.ok(a.do("GET", "/v1/audit?trace_id="+traceID, admin, ""), 200)
		for _, it := range m["items"].([]any) {
			if ev := it.(map[string]any); ev["action"] == action {
				return ev
			}
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("no %s event with trace_id %s: %v", action, traceID, m)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestTracing_fencedAppendFromTheGoClient_isOneTraceWithLeaseSQLAndAudit(t *testing.T) {
	forEachTracedLocker(t, func(t *testing.T, a *app, tp *sdktrace.TracerProvider, exp *tracetest.InMemoryExporter) {
		a.withVersions(1)
		srv := httptest.NewServer(a.h)
		defer srv.Close()
		c := client.New(srv.URL, runtime)

		const user = "user-7f3a-never-in-spans"
		ctx, root := tp.Tracer("runtime").Start(context.Background(), "runtime.turn")
		if _, err := c.CreateSession(ctx, client.CreateSessionRequest{SessionID: "s1", Agent: "support", Env: "prod", UserID: user}); err != nil {
			t.Fatal(err)
		}
		l, err := c.AcquireSessionLease(ctx, "s1", client.LeaseRequest{Holder: "runtime-a", TTL: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.AppendTurns(ctx, "s1", client.Fenced(0, l.Fence), client.TurnInput{Role: "user", Content: json.RawMessage(`"hello"`)}); err != nil {
			t.Fatal(err)
		}
		root.End()
		tid := root.SpanContext().TraceID()
		ss := spansOf(exp, tid)

		var clientSpans, serverSpans int
		for _, s := range ss {
			switch s.SpanKind {
			case trace.SpanKindClient:
				if _, ok := attrOf(s, "db.system.name"); !ok {
					clientSpans++
				}
			case trace.SpanKindServer:
				serverSpans++
			}
		}
		if clientSpans < 3 || serverSpans != 3 {
			t.Fatalf("client spans %d, server spans %d in trace %s: %v", clientSpans, serverSpans, tid, names(ss))
		}
		app := named(ss, "POST /v1/sessions/:id/turns")
		if len(app) != 1 {
			t.Fatalf("append spans: %v", names(ss))
		}
		if v, _ := attrOf(app[0], "promptd.write.outcome"); v.AsString() != "ok" {
			t.Errorf("write outcome = %v", v.Emit())
		}
		if v, _ := attrOf(app[0], "http.route"); v.AsString() != "/v1/sessions/:id/turns" {
			t.Errorf("http.route = %v", v.Emit())
		}
		if v, _ := attrOf(app[0], "http.response.status_code"); v.AsInt64() != 201 {
			t.Errorf("status = %v", v.Emit())
		}
		acq := named(ss, "lock.acquire")
		if len(acq) != 1 {
			t.Fatalf("lock.acquire spans: %v", names(ss))
		}
		if v, _ := attrOf(acq[0], "promptd.lock.fence"); v.AsInt64() != l.Fence {
			t.Errorf("lock fence = %v, want %d", v.Emit(), l.Fence)
		}
		if v, _ := attrOf(acq[0], "promptd.lock.key"); !strings.Contains(v.AsString(), "s1") {
			t.Errorf("lock key = %v", v.Emit())
		}
		if _, ok := attrOf(acq[0], "promptd.lock.wait_ms"); !ok || len(acq[0].Events) == 0 || acq[0].Events[0].Name != "lock.fence_granted" {
			t.Errorf("lock.acquire: %+v", acq[0])
		}
		var sqlUnderAppend int
		ops := map[string]bool{}
		for _, s := range ss {
			if _, ok := attrOf(s, "db.system.name"); ok && s.Parent.SpanID() == app[0].SpanContext.SpanID() {
				sqlUnderAppend++
				ops[s.Name] = true
				if q, _ := attrOf(s, "db.query.text"); strings.Contains(q.AsString(), "hello") {
					t.Errorf("a statement with its values: %s", q.AsString())
				}
			}
		}
		// the append's own statements (its conditional UPDATE, the turns'
		// INSERT and the audit row's) run past GORM's builder: they are
		// traced all the same
		if sqlUnderAppend == 0 || !ops["UPDATE"] || !ops["INSERT"] {
			t.Errorf("SQL spans under the append: %d, operations %v; want the UPDATE and the INSERTs: %v", sqlUnderAppend, ops, names(ss))
		}

		ev := a.auditByTrace(tid.String(), "lease.acquired")
		if ev["trace_id"] != tid.String() {
			t.Fatalf("audit event = %v", ev)
		}

		// Never recorded: the token, the Lease-Token, user_id, payloads.
		dump, _ := json.Marshal(exp.GetSpans())
		for _, secret := range []string{runtime, l.Token, user, "hello"} {
			if strings.Contains(string(dump), secret) {
				t.Errorf("the exported spans contain %q", secret)
			}
		}
	})
}

func TestTracing_leasePreemptedUnderAPausedHolder_showsBothFencesAndTheStaleWrite(t *testing.T) {
	forEachTracedLocker(t, func(t *testing.T, a *app, tp *sdktrace.TracerProvider, exp *tracetest.InMemoryExporter) {
		a.withVersions(1)
		srv := httptest.NewServer(a.h)
		defer srv.Close()
		c := client.New(srv.URL, runtime)

		ctx, root := tp.Tracer("test").Start(context.Background(), "preemption")
		if _, err := c.CreateSession(ctx, client.CreateSessionRequest{SessionID: "s1", Agent: "support", Env: "prod"}); err != nil {
			t.Fatal(err)
		}
		la, err := c.AcquireSessionLease(ctx, "s1", client.LeaseRequest{Holder: "runtime-a", TTL: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		// A pauses (no renewal, no write); B preempts and writes.
		lb, err := c.AcquireSessionLease(ctx, "s1", client.LeaseRequest{Holder: "runtime-b", TTL: 30 * time.Second, Mode: client.ModePreempt})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.AppendTurns(ctx, "s1", client.Fenced(0, lb.Fence), client.TurnInput{Role: "user", Content: json.RawMessage(`"b"`)}); err != nil {
			t.Fatal(err)
		}
		// A wakes and writes with its old fence: refused.
		if _, err := c.AppendTurns(ctx, "s1", client.Fenced(1, la.Fence), client.TurnInput{Role: "user", Content: json.RawMessage(`"late a"`)}); err == nil {
			t.Fatal("the late write of the preempted holder passed")
		}
		root.End()
		ss := spansOf(exp, root.SpanContext().TraceID())

		fences := map[int64]bool{}
		for _, s := range named(ss, "lock.acquire") {
			for _, e := range s.Events {
				for _, kv := range e.Attributes {
					if kv.Key == "promptd.lock.fence" {
						fences[kv.Value.AsInt64()] = true
					}
				}
			}
		}
		if !fences[la.Fence] || !fences[lb.Fence] || lb.Fence <= la.Fence {
			t.Fatalf("fences granted in the trace %v, want %d and %d", fences, la.Fence, lb.Fence)
		}
		var outcomes []string
		for _, s := range named(ss, "POST /v1/sessions/:id/turns") {
			v, _ := attrOf(s, "promptd.write.outcome")
			outcomes = append(outcomes, v.AsString())
		}
		if strings.Join(outcomes, ",") != "ok,stale_fence" {
			t.Fatalf("write outcomes = %v", outcomes)
		}
		ev := a.auditByTrace(root.SpanContext().TraceID().String(), "write.rejected")
		if !strings.Contains(string(mustJSON(ev["details"])), "stale_fence") {
			t.Errorf("write.rejected = %v", ev)
		}
	})
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }

func names(ss tracetest.SpanStubs) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Name
	}
	return out
}
