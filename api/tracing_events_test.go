package api_test

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestTracing_eventStreamSend_isASpanLinkedToTheChangesSpan: a write of
// the change feed to an SSE subscriber is an events.send span, a child of
// the stream's request span, linked to the span each change it carries
// was written in (its audit event's trace_id and span_id).
func TestTracing_eventStreamSend_isASpanLinkedToTheChangesSpan(t *testing.T) {
	_, exp := traced(t)
	a := sqliteApp(t)
	srv := httptest.NewServer(a.h)
	defer srv.Close()
	r, _ := http.NewRequest("GET", srv.URL+"/v1/events?since=0", nil)
	r.Header.Set("Authorization", "Bearer "+admin)
	r.Header.Set("Accept", "text/event-stream")
	r.Header.Set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	a.createVersion("support", 0, "v1")
	if e, ok := readSSE(t, sc); !ok || e.event != "version.created" {
		t.Fatalf("event = %+v (ok %v)", e, ok)
	}
	ev := a.ok(a.do("GET", "/v1/audit?action=version.created", admin, ""), 200)["items"].([]any)[0].(map[string]any)

	var send *tracetest.SpanStub
	deadline := time.Now().Add(5 * time.Second)
	for send == nil && time.Now().Before(deadline) {
		for _, s := range exp.GetSpans() {
			if s.Name == "events.send" {
				send = &s
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if send == nil {
		t.Fatalf("no events.send span: %v", names(exp.GetSpans()))
	}
	if send.SpanContext.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("events.send is in trace %s, not the stream's", send.SpanContext.TraceID())
	}
	if len(send.Links) != 1 || send.Links[0].SpanContext.TraceID().String() != ev["trace_id"] {
		t.Fatalf("events.send links %+v, want the change's trace %v", send.Links, ev["trace_id"])
	}
	var changeSpan bool
	for _, s := range spansOf(exp, send.Links[0].SpanContext.TraceID()) {
		changeSpan = changeSpan || s.SpanContext.SpanID() == send.Links[0].SpanContext.SpanID()
	}
	if !changeSpan {
		t.Errorf("the link names span %s, not a span of the change's trace", send.Links[0].SpanContext.SpanID())
	}
	if v, _ := attrOf(*send, "promptd.event.count"); v.AsInt64() != 1 {
		t.Errorf("promptd.event.count = %v", v.Emit())
	}
}
