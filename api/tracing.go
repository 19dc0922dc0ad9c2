package api

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/telemetry"
)

// Attributes of promptd's spans (api/openapi.yaml "Tracing"). Never recorded:
// tokens, Lease-Token, user_id, variables, payloads.
const (
	attrAgent        = attribute.Key("promptd.agent")
	attrEnv          = attribute.Key("promptd.env")
	attrVersion      = attribute.Key("promptd.version")
	attrReleaseID    = attribute.Key("promptd.release.id")
	attrWriteOutcome = attribute.Key("promptd.write.outcome")
	attrRevision     = attribute.Key("promptd.revision")
	attrSessionID    = attribute.Key("promptd.session.id")
)

// writeRoutes are the writes whose span carries promptd.write.outcome:
// the writes under the session write rule and the board's fenced writes.
var writeRoutes = map[string]bool{
	"/v1/sessions/:id/turns":                  true,
	"/v1/sessions/:id/state/:key":             true,
	"/v1/sessions/:id/close":                  true,
	"/v1/boards/:board/records/:id":           true,
	"/v1/boards/:board/records/:id/heartbeat": true,
	"/v1/boards/:board/records/:id/release":   true,
	"/v1/boards/:board/records/:id/claim":     true,
	"/v1/boards/:board/claim":                 true,
}

// writeOutcomes are the refusals promptd.write.outcome names; any other
// error leaves the attribute out (the span's status says it failed).
var writeOutcomes = map[string]bool{"revision_conflict": true, "stale_fence": true, "lease_held": true, "claim_expired": true}

// trace is the server span of a request, mounted only when tracing is on
// (telemetry.Enabled at New). The caller's traceparent and tracestate are
// honoured (baggage is not read); the span is named by the route
// template, never the raw path, and carries the HTTP semantic
// conventions' attributes plus the agent, env and session of the route.
// It runs inside observe, so the request's log line carries its ids.
//
// Most requests are not sampled (1 % is a usual ratio), so the span is
// started with nothing a standard sampler does not read, and its name and
// attributes are built only when it records: an unsampled request costs
// the span's start and its context, not its attributes (TestTracingOverhead).
//
// Echo applies its middleware to every request (trace(next) runs per
// request), so the tracer is a package variable, not taken here.
func (s *Server) trace(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		route := c.Path()
		if route == "" {
			route = unmatched
		}
		ctx := r.Context()
		if _, ok := r.Header[headerTraceparent]; ok { // Header.Get would canonicalize (allocate) the name every request
			ctx = otel.GetTextMapPropagator().Extract(ctx, propagation.HeaderCarrier(r.Header))
		}
		ctx, span := apiTracer.Start(ctx, route, serverStart...)
		defer span.End()
		c.SetRequest(r.WithContext(ctx))
		if !span.IsRecording() {
			return next(c)
		}
		span.SetName(r.Method + " " + route)
		span.SetAttributes(attribute.String("http.request.method", r.Method), attribute.String("http.route", route),
			attribute.String("url.scheme", scheme(r)))
		if v := c.Param("agent"); v != "" {
			span.SetAttributes(attrAgent.String(v))
		}
		if v := c.Param("env"); v != "" {
			span.SetAttributes(attrEnv.String(v))
		}
		if v := c.Param("id"); v != "" && len(route) > len("/v1/sessions/") && route[:len("/v1/sessions/")] == "/v1/sessions/" {
			span.SetAttributes(attrSessionID.String(v))
		}
		err := next(c)
		status, code := c.Response().Status, ""
		if err != nil {
			p := problemFor(err)
			status, code = p.Status(), p.Code
			if !c.Response().Committed {
				span.SetAttributes(attribute.String("error.type", code))
			}
		}
		span.SetAttributes(attribute.Int("http.response.status_code", status))
		if status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
		if writeRoutes[route] && r.Method != http.MethodGet {
			switch {
			case err == nil && status < 400:
				span.SetAttributes(attrWriteOutcome.String("ok"))
			case writeOutcomes[code]:
				span.SetAttributes(attrWriteOutcome.String(code))
			}
		}
		return err
	}
}

// apiTracer starts the server and send spans (telemetry's switch provider
// forwards it to whichever provider is installed).
var apiTracer = otel.Tracer("github.com/promptd/promptd/api")

// headerTraceparent is W3C's traceparent as net/http keys it.
var headerTraceparent = http.CanonicalHeaderKey("traceparent")

// serverStart are the server spans' start options, built once (a slice
// built per call escapes: an allocation per request).
var serverStart = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}

func scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// spanAttrs adds attributes to the request's span (nothing when it is not
// recording).
func spanAttrs(c echo.Context, kv ...attribute.KeyValue) {
	if span := trace.SpanFromContext(c.Request().Context()); span.IsRecording() {
		span.SetAttributes(kv...)
	}
}

// traceRevision records the revision a write left (the session's, after
// the write) on the request's span.
func traceRevision(c echo.Context, rev int64) { spanAttrs(c, attrRevision.Int64(rev)) }

// traceVersion records the version a resolve answered and its release.
func traceVersion(c echo.Context, version int, releaseID string) {
	span := trace.SpanFromContext(c.Request().Context())
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attrVersion.Int(version))
	if releaseID != "" {
		span.SetAttributes(attrReleaseID.String(releaseID))
	}
}

// sendSpan is the span of one write of the change feed to a stream: a
// producer span under the stream's request span, linked to the span each
// event's change was written in (its audit event's trace_id and span_id),
// so a change's trace leads to the streams that carried it. Nothing is
// built when the stream's span is not recording (tracing off, or the
// stream not sampled).
func sendSpan(ctx context.Context, evs []audit.Stamped) trace.Span {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return noop.Span{}
	}
	links := make([]trace.Link, 0, len(evs))
	for _, e := range evs {
		if l, ok := telemetry.LinkTo(e.TraceID, e.SpanID); ok {
			l.Attributes = []attribute.KeyValue{attribute.Int64("promptd.event.seq", e.Seq)}
			links = append(links, l)
		}
	}
	_, span := apiTracer.Start(ctx, "events.send", trace.WithSpanKind(trace.SpanKindProducer), trace.WithLinks(links...),
		trace.WithAttributes(attribute.Int("promptd.event.count", len(evs)), attribute.Int64("promptd.event.seq", evs[len(evs)-1].Seq)))
	return span
}

// endSend ends a send's span; err is the write's (the subscriber is dropped).
func endSend(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, "write failed")
	}
	span.End()
}
