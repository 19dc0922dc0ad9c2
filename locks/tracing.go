package locks

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/promptd/promptd/telemetry"
)

// Lease work as OpenTelemetry spans (none unless telemetry.Install
// installed a tracer provider, as promptd's other spans): lock.acquire
// (mode, wait, outcome, and an event for the fence granted), lock.renew and lock.release by token, lock.keepalive
// for the renewals of promptd's own leases and lock.lost when one is
// lost, both linked to the acquire. Keys are recorded, tokens never.
//
// Attributes are set after a span starts and only when it records: an
// unsampled lease call (most of them) allocates nothing for them. No
// sampler promptd configures (OTEL_TRACES_SAMPLER's) reads attributes.
var tracer = otel.Tracer("github.com/promptd/promptd/locks")

// offSpan is the span of lease work while no tracer provider is installed
// (telemetry.Enabled): the global tracer would still allocate a
// non-recording span and a context for it per call.
var offSpan trace.Span = noop.Span{}

// startSpan starts a lease call's span, or none when tracing is off (ctx
// unchanged).
func startSpan(ctx context.Context, name string) (context.Context, trace.Span) {
	if !telemetry.Enabled() {
		return ctx, offSpan
	}
	return tracer.Start(ctx, name)
}

const (
	attrKey     = attribute.Key("promptd.lock.key")
	attrFence   = attribute.Key("promptd.lock.fence")
	attrWaitMS  = attribute.Key("promptd.lock.wait_ms")
	attrMode    = attribute.Key("promptd.lock.mode")
	attrOutcome = attribute.Key("promptd.lock.outcome")
	attrHolder  = attribute.Key("promptd.lock.holder")
	attrReason  = attribute.Key("promptd.lock.reason")
)

func (m Mode) String() string {
	switch m {
	case ModePreempt:
		return "preempt"
	case ModeReenter:
		return "reenter"
	}
	return "acquire"
}

// outcome names how a lease call ended.
func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrHeld):
		return "held"
	case errors.Is(err, ErrLeaseLost):
		return "lost"
	case errors.Is(err, ErrNotHeld):
		return "not_held"
	case errors.Is(err, ErrTooManyWaiters):
		return "too_many_waiters"
	case errors.Is(err, ErrUnavailable):
		return "unavailable"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	case errors.Is(err, ErrClosed):
		return "closed"
	}
	return "error"
}

// endSpan records the outcome and ends span; an unexpected error marks
// it failed (held, lost and not-held are answers, not failures).
func endSpan(span trace.Span, err error) {
	if span.IsRecording() {
		o := outcome(err)
		span.SetAttributes(attrOutcome.String(o))
		if o == "unavailable" || o == "error" {
			span.SetStatus(codes.Error, o)
		}
	}
	span.End()
}

// traceAcquired records the grant on the acquire's span.
func traceAcquired(ctx context.Context, key string, g Grant) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.AddEvent("lock.fence_granted", trace.WithAttributes(attrKey.String(key), attrFence.Int64(g.Fence),
		attrHolder.String(g.Holder), attribute.Bool("promptd.lock.preempted", g.Preempted)))
	span.SetAttributes(attrFence.Int64(g.Fence))
}

// traceWait ends the acquire's span with its wait.
func traceWait(span trace.Span, start time.Time, err error) {
	if span.IsRecording() {
		span.SetAttributes(attrWaitMS.Int64(time.Since(start).Milliseconds()))
	}
	endSpan(span, err)
}

// background starts a root span of background lease work, linked to the
// span that acquired the lease.
func (l *Lease) background(name string) trace.Span {
	if !telemetry.Enabled() {
		return offSpan
	}
	opts := []trace.SpanStartOption{trace.WithAttributes(attrKey.String(l.key), attrFence.Int64(l.fence))}
	if l.origin.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: l.origin}))
	}
	_, span := tracer.Start(context.Background(), name, append(opts, trace.WithNewRoot())...)
	return span
}
