package telemetry

import (
	"context"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	"go.opentelemetry.io/otel/trace/noop"
)

// OpenTelemetry's global provider delegates once: tracers taken from it
// before the first SetTracerProvider (package variables) stay bound to
// the first provider set. promptd sets one switchProvider as the global,
// once, and Install swaps what it forwards to, so a test can install a
// fresh in-memory provider after another's.
type switchProvider struct {
	embedded.TracerProvider
	cur atomic.Value // holder
}

type holder struct{ tp trace.TracerProvider }

var (
	switchOnce sync.Once
	global     = &switchProvider{}
)

func (p *switchProvider) set(tp trace.TracerProvider) {
	p.cur.Store(holder{tp})
	switchOnce.Do(func() { otel.SetTracerProvider(p) })
}

func (p *switchProvider) current() trace.TracerProvider {
	if h, ok := p.cur.Load().(holder); ok {
		return h.tp
	}
	return noop.NewTracerProvider()
}

func (p *switchProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return &switchTracer{p: p, name: name, opts: opts}
}

type switchTracer struct {
	embedded.Tracer
	p     *switchProvider
	name  string
	opts  []trace.TracerOption
	cache atomic.Pointer[cachedTracer]
}

type cachedTracer struct {
	tp trace.TracerProvider
	t  trace.Tracer
}

func (t *switchTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	tp := t.p.current()
	c := t.cache.Load()
	if c == nil || c.tp != tp {
		c = &cachedTracer{tp: tp, t: tp.Tracer(t.name, t.opts...)}
		t.cache.Store(c)
	}
	return c.t.Start(ctx, name, opts...)
}
