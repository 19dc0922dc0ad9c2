package webhook_test

import (
	"context"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"

	"github.com/promptd/promptd"
	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/telemetry"
	"github.com/promptd/promptd/webhook"
	"github.com/promptd/promptd/webhook/webhooktest"
)

// TestDelivery_whenTraced_isASpanLinkedToTheChangesSpan: each attempt is a
// client span of its own trace linked to the span the change was written
// in (the audit event's trace_id and span_id), with the webhook, the event
// and the outcome, and never the URL's path or the body.
func TestDelivery_whenTraced_isASpanLinkedToTheChangesSpan(t *testing.T) {
	testenv.ForEachDialect(t, promptd.Migrations(), func(t *testing.T, db *gorm.DB) {
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		telemetry.Install(tp)
		t.Cleanup(func() { telemetry.Uninstall(); _ = tp.Shutdown(context.Background()) })

		recv := webhooktest.NewReceiver(t)
		recv.FailFirst = 1
		rt := runtime(t, db, nil)
		w, err := rt.Webhooks.Create(context.Background(), webhook.CreateInput{URL: recv.URL() + "/hook-path-never-in-spans", Actions: []string{"version.*"}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, change := tp.Tracer("test").Start(context.Background(), "POST /v1/agents/:agent/versions")
		if err := db.Transaction(func(tx *gorm.DB) error {
			return audit.Log{Instance: "test-1"}.Append(ctx, tx, audit.Event{Action: "version.created", Agent: "support",
				Resource: "agents/support/versions/1"}, map[string]any{"secret_detail": "body-never-in-spans"})
		}); err != nil {
			t.Fatal(err)
		}
		change.End()
		waitFor(t, 30*time.Second, "the delivery", func() bool { return recv.Delivered() == 1 })

		var sends []tracetest.SpanStub
		waitFor(t, 5*time.Second, "two webhook.deliver spans", func() bool {
			sends = sends[:0]
			for _, s := range exp.GetSpans() {
				if s.Name == "webhook.deliver" {
					sends = append(sends, s)
				}
			}
			return len(sends) == 2
		})
		want := change.SpanContext()
		outcomes := map[string]bool{}
		for _, s := range sends {
			if len(s.Links) != 1 || !s.Links[0].SpanContext.Equal(want.WithRemote(true)) && !s.Links[0].SpanContext.Equal(want) {
				t.Fatalf("webhook.deliver links %+v, want the change's span %s/%s", s.Links, want.TraceID(), want.SpanID())
			}
			if s.SpanContext.TraceID() == want.TraceID() || s.SpanKind != trace.SpanKindClient {
				t.Errorf("webhook.deliver: trace %s kind %v; want a client span of its own trace", s.SpanContext.TraceID(), s.SpanKind)
			}
			got := map[string]string{}
			for _, kv := range s.Attributes {
				got[string(kv.Key)] = kv.Value.Emit()
			}
			if got["promptd.webhook.id"] != w.ID || got["promptd.event.action"] != "version.created" || got["promptd.event.seq"] == "" {
				t.Errorf("webhook.deliver attributes %v", got)
			}
			outcomes[got["promptd.webhook.outcome"]+"/"+got["http.response.status_code"]] = true
			for k, v := range got {
				if k == "url.full" || k == "url.path" || strings.Contains(v, "never-in-spans") {
					t.Errorf("webhook.deliver records %s=%s", k, v)
				}
			}
		}
		if !outcomes["retry/500"] || !outcomes["delivered/204"] {
			t.Errorf("outcomes %v, want retry/500 and delivered/204", outcomes)
		}
	})
}
