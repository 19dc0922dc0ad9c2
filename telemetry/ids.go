package telemetry

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// IDs are the trace id (32 hex digits) and span id (16) of ctx's span,
// or empty strings when ctx carries none.
func IDs(ctx context.Context) (traceID, spanID string) {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return "", ""
	}
	return sc.TraceID().String(), sc.SpanID().String()
}

// LinkTo is a link to the span traceID/spanID names (as IDs returned
// them), or false when they do not name one.
func LinkTo(traceID, spanID string) (trace.Link, bool) {
	t, err := trace.TraceIDFromHex(traceID)
	if err != nil {
		return trace.Link{}, false
	}
	s, err := trace.SpanIDFromHex(spanID)
	if err != nil {
		return trace.Link{}, false
	}
	return trace.Link{SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: t, SpanID: s, Remote: true,
		TraceFlags: trace.FlagsSampled})}, true
}

// LogHandler adds trace_id and span_id to every record logged with a
// context that carries a span (every line of a request), then passes it
// to h.
func LogHandler(h slog.Handler) slog.Handler { return logHandler{h} }

type logHandler struct{ slog.Handler }

func (l logHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return l.Handler.Handle(ctx, r)
}

func (l logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return logHandler{l.Handler.WithAttrs(as)}
}

func (l logHandler) WithGroup(name string) slog.Handler { return logHandler{l.Handler.WithGroup(name)} }
