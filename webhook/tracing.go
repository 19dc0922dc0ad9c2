package webhook

import (
	"context"
	"net/url"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/promptd/promptd/telemetry"
)

var tracer = otel.Tracer("github.com/promptd/promptd/webhook")

// deliverySpan starts the span of one attempt of d: a client span of its
// own trace (an attempt runs long after the request that made the change)
// linked to the span the change was written in, as its audit event
// recorded it. It names the webhook, the event and the receiver's host;
// never the URL's path or query (they may carry a secret) or the body.
// Off (no tracing installed), it reads nothing and starts nothing.
func (s *Service) deliverySpan(ctx context.Context, t target, d deliveryRow) (context.Context, trace.Span) {
	if !telemetry.Enabled() {
		return ctx, noop.Span{}
	}
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("promptd.webhook.id", t.id), attribute.Int64("promptd.event.seq", d.Seq),
			attribute.String("promptd.event.action", d.Action), attribute.Int("promptd.webhook.attempt", d.Attempts),
			attribute.String("http.request.method", "POST"))}
	if u, err := url.Parse(t.url); err == nil {
		opts = append(opts, trace.WithAttributes(attribute.String("server.address", u.Hostname())))
	}
	var ids []struct{ TraceID, SpanID string }
	if err := s.o.DB.WithContext(ctx).Raw(`SELECT trace_id, span_id FROM audit_events WHERE seq = ?`, d.Seq).Scan(&ids).Error; err == nil &&
		len(ids) == 1 {
		if l, ok := telemetry.LinkTo(ids[0].TraceID, ids[0].SpanID); ok {
			opts = append(opts, trace.WithLinks(l))
		}
	}
	return tracer.Start(ctx, "webhook.deliver", opts...)
}

// endDelivery records an attempt's answer (status 0: none) and outcome
// (delivered, retry, failed) on its span and ends it.
func endDelivery(span trace.Span, status int, failure, outcome string) {
	if status > 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", status))
	}
	if failure != "" {
		span.SetAttributes(attribute.String("error.type", failure))
		span.SetStatus(codes.Error, failure)
	}
	span.SetAttributes(attribute.String("promptd.webhook.outcome", outcome))
	span.End()
}
