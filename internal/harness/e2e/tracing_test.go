package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	promptclient "github.com/promptd/promptd/api/client"
	"github.com/promptd/promptd/telemetry"
)

// otlpReceiver is an OTLP/HTTP trace receiver (POST /v1/traces,
// application/x-protobuf): it decodes every ExportTraceServiceRequest and
// keeps the spans with their service.name, and the bytes received.
type otlpReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	raw   [][]byte
	spans []receivedSpan
	bad   []string
}

type receivedSpan struct {
	service string
	*tracepb.Span
}

func startOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	r := &otlpReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

func (r *otlpReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err == nil && req.Header.Get("Content-Encoding") == "gzip" {
		var zr *gzip.Reader
		if zr, err = gzip.NewReader(bytes.NewReader(body)); err == nil {
			body, err = io.ReadAll(zr)
		}
	}
	var msg coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &msg)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" || err != nil {
		r.bad = append(r.bad, req.Method+" "+req.URL.Path+" "+req.Header.Get("Content-Type")+" "+errString(err))
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	r.raw = append(r.raw, body)
	for _, rs := range msg.ResourceSpans {
		svc := str(rs.GetResource().GetAttributes(), "service.name")
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				r.spans = append(r.spans, receivedSpan{svc, s})
			}
		}
	}
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// trace is the spans received so far of the trace traceID (hex).
func (r *otlpReceiver) trace(traceID string) []receivedSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []receivedSpan
	for _, s := range r.spans {
		if hex.EncodeToString(s.TraceId) == traceID {
			out = append(out, s)
		}
	}
	return out
}

func (r *otlpReceiver) bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Join(r.raw, nil)
}

func attr(kvs []*commonpb.KeyValue, key string) (*commonpb.AnyValue, bool) {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return nil, false
}

func str(kvs []*commonpb.KeyValue, key string) string {
	v, _ := attr(kvs, key)
	return v.GetStringValue()
}

func num(kvs []*commonpb.KeyValue, key string) int64 {
	v, _ := attr(kvs, key)
	return v.GetIntValue()
}

func spanNames(ss []receivedSpan) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.service + ":" + s.Name
	}
	return out
}

// TestTracing_fencedAppendExportedOverOTLP_isOneTraceWithClientServerLeaseSQLAndAudit
// is issue 18's first must-show over the wire: a promptd process
// configured only by OTEL_* variables (OTLP/HTTP protobuf) exports to an
// in-process receiver; a runtime (this test, exporting its own spans the
// same way) makes a fenced append carrying its traceparent. The receiver
// gets one trace holding the runtime's client spans, promptd's server
// spans, the lease span and the SQL spans under the append; the audit
// events carry that trace id and GET /v1/audit?trace_id= finds them; no
// token, Lease-Token, user_id or payload is in the bytes exported.
func TestTracing_fencedAppendExportedOverOTLP_isOneTraceWithClientServerLeaseSQLAndAudit(t *testing.T) {
	recv := startOTLPReceiver(t)
	c := startCluster(t, 1, map[string]string{
		"OTEL_TRACES_EXPORTER":        "otlp",
		"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
		"OTEL_EXPORTER_OTLP_ENDPOINT": recv.URL,
		"OTEL_TRACES_SAMPLER":         "parentbased_always_on",
		"OTEL_BSP_SCHEDULE_DELAY":     "100",
		"OTEL_RESOURCE_ATTRIBUTES":    "deployment.environment.name=e2e",
	})
	base := c.nodes[0].URL
	seed(t, base, "support", "prod", 1)

	// The runtime: its own SDK, exporting over OTLP/HTTP to the same receiver.
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(recv.URL+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(100*time.Millisecond)),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "runtime"))))
	telemetry.Install(tp) // the Go client's spans go to tp
	t.Cleanup(func() { telemetry.Uninstall(); _ = tp.Shutdown(context.Background()) })

	const user = "user-7f3a-never-in-spans"
	const payload = "hello-never-in-spans"
	pc := promptclient.New(base, runtimeToken)
	ctx, root := tp.Tracer("runtime").Start(context.Background(), "runtime.turn")
	if _, err := pc.CreateSession(ctx, promptclient.CreateSessionRequest{SessionID: "s1", Agent: "support", Env: "prod", UserID: user}); err != nil {
		t.Fatal(err)
	}
	l, err := pc.AcquireSessionLease(ctx, "s1", promptclient.LeaseRequest{Holder: "runtime-a", TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pc.AppendTurns(ctx, "s1", promptclient.Fenced(0, l.Fence),
		promptclient.TurnInput{Role: "user", Content: json.RawMessage(`"` + payload + `"`)}); err != nil {
		t.Fatal(err)
	}
	root.End()
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	tid := root.SpanContext().TraceID().String()

	// Wait for promptd's batch to arrive: the append's server span and the
	// SQL spans under it.
	var ss []receivedSpan
	var app *receivedSpan
	deadline := time.Now().Add(15 * time.Second)
	for {
		ss, app = recv.trace(tid), nil
		var sqlUnder int
		for i := range ss {
			if ss[i].service == "promptd" && ss[i].Name == "POST /v1/sessions/:id/turns" {
				app = &ss[i]
			}
		}
		for _, s := range ss {
			if app != nil && bytes.Equal(s.ParentSpanId, app.SpanId) && str(s.Attributes, "db.system.name") != "" {
				sqlUnder++
			}
		}
		if app != nil && sqlUnder > 0 && len(named(ss, "promptd", "lock.acquire")) > 0 {
			break
		}
		if time.Now().After(deadline) {
			recv.mu.Lock()
			bad := recv.bad
			recv.mu.Unlock()
			t.Fatalf("trace %s as received within 15 s: %v (rejected exports: %v)\npromptd log:\n%s", tid, spanNames(ss), bad, c.nodes[0].Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("trace %s: %d spans: %v", tid, len(ss), spanNames(ss))

	// The runtime's client spans are the parents of promptd's server spans.
	clients, servers := 0, 0
	for _, s := range ss {
		switch {
		case s.service == "runtime" && s.Kind == tracepb.Span_SPAN_KIND_CLIENT:
			clients++
		case s.service == "promptd" && s.Kind == tracepb.Span_SPAN_KIND_SERVER:
			servers++
			if !hasClient(ss, s.ParentSpanId) {
				t.Errorf("server span %s has no client span of the runtime as its parent", s.Name)
			}
		}
	}
	if clients != 3 || servers != 3 {
		t.Fatalf("client spans %d, server spans %d: %v", clients, servers, spanNames(ss))
	}
	if got := str(app.Attributes, "http.route"); got != "/v1/sessions/:id/turns" {
		t.Errorf("http.route = %q", got)
	}
	if got := num(app.Attributes, "http.response.status_code"); got != 201 {
		t.Errorf("http.response.status_code = %d", got)
	}
	if got := str(app.Attributes, "promptd.write.outcome"); got != "ok" {
		t.Errorf("promptd.write.outcome = %q", got)
	}
	if got := str(app.Attributes, "promptd.session.id"); got != "s1" {
		t.Errorf("promptd.session.id = %q", got)
	}
	acq := named(ss, "promptd", "lock.acquire")
	if len(acq) != 1 {
		t.Fatalf("lock.acquire spans: %v", spanNames(ss))
	}
	if got := num(acq[0].Attributes, "promptd.lock.fence"); got != l.Fence {
		t.Errorf("promptd.lock.fence = %d, want %d", got, l.Fence)
	}
	if got := str(acq[0].Attributes, "promptd.lock.key"); !strings.Contains(got, "s1") {
		t.Errorf("promptd.lock.key = %q", got)
	}
	if _, ok := attr(acq[0].Attributes, "promptd.lock.wait_ms"); !ok {
		t.Errorf("lock.acquire has no promptd.lock.wait_ms: %v", acq[0].Attributes)
	}
	for _, s := range ss {
		if bytes.Equal(s.ParentSpanId, app.SpanId) && str(s.Attributes, "db.system.name") != "" {
			if got := str(s.Attributes, "db.system.name"); got != "mysql" || str(s.Attributes, "db.operation.name") == "" ||
				s.Kind != tracepb.Span_SPAN_KIND_CLIENT {
				t.Errorf("SQL span %s: kind %v, %v", s.Name, s.Kind, s.Attributes)
			}
		}
	}

	// The audit events of the trace carry its id and are found by it.
	for _, action := range []string{"session.created", "lease.acquired"} {
		ev := auditByTrace(t, base, tid, action)
		if ev["trace_id"] != tid {
			t.Errorf("%s event = %v", action, ev)
		}
	}

	// Never exported: the tokens, the Lease-Token, user_id, the payload.
	dump := recv.bytes()
	for _, secret := range []string{runtimeToken, adminToken, l.Token, user, payload} {
		if bytes.Contains(dump, []byte(secret)) {
			t.Errorf("the exported bytes contain %q", secret)
		}
	}
}

func hasClient(ss []receivedSpan, id []byte) bool {
	for _, s := range ss {
		if s.service == "runtime" && s.Kind == tracepb.Span_SPAN_KIND_CLIENT && bytes.Equal(s.SpanId, id) {
			return true
		}
	}
	return false
}

func named(ss []receivedSpan, service, name string) []receivedSpan {
	var out []receivedSpan
	for _, s := range ss {
		if s.service == service && s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// auditByTrace polls GET /v1/audit?trace_id= until an event of action
// shows (lease events are written asynchronously, in batches).
func auditByTrace(t *testing.T, base, traceID, action string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var page struct{ Items []map[string]any }
		must(t, 200, "GET", base+"/v1/audit?trace_id="+traceID, adminToken, nil).json(t, &page)
		for _, ev := range page.Items {
			if ev["action"] == action {
				return ev
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s event with trace_id %s: %v", action, traceID, page.Items)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
