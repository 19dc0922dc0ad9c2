package client

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The client propagates the caller's trace: each request is a client
// span of the caller's tracer provider (a no-op unless the program
// installed one) and carries traceparent/tracestate, W3C trace context,
// whatever propagator the program set, so a caller that only has a remote
// parent in its context (promptctl --traceparent) still passes it on.
// Spans record the method and path, never the query (user_id), headers
// (the token, Lease-Token) or bodies.
var tracer = otel.Tracer("github.com/promptd/promptd/api/client")

var traceContext = propagation.TraceContext{}

func startSpan(ctx context.Context, method, path string) (context.Context, trace.Span) {
	return tracer.Start(ctx, method, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("http.request.method", method), attribute.String("url.path", path)))
}

func inject(ctx context.Context, h http.Header) {
	traceContext.Inject(ctx, propagation.HeaderCarrier(h))
}

func endSpan(span trace.Span, resp *http.Response, err error) {
	if err != nil {
		span.SetStatus(codes.Error, "transport error")
		return
	}
	span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	if resp.StatusCode >= 500 {
		span.SetStatus(codes.Error, http.StatusText(resp.StatusCode))
	}
}
