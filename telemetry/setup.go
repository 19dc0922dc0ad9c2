package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ServiceName is the service.name of promptd's spans unless
// OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES names another.
const ServiceName = "promptd"

// enabled is set by Install: the middleware and hooks look at it once,
// when they are built.
var enabled atomic.Bool

// Enabled reports whether a tracer provider was installed (Setup found
// tracing configured, or a test called Install).
func Enabled() bool { return enabled.Load() }

// Configured reports whether the environment asks for traces: an
// OTEL_TRACES_EXPORTER other than none, or an OTLP endpoint, and no
// OTEL_SDK_DISABLED=true.
func Configured(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if e := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); e != "" {
		return e != "none"
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup installs the tracer provider the environment describes and
// returns its shutdown (which flushes what is queued). When tracing is not
// configured it installs nothing and the shutdown does nothing. The SDK
// reads the OTEL_* variables itself (exporter and protocol, endpoints and
// headers, OTEL_TRACES_SAMPLER and its argument, the batch processor's
// limits, OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME).
func Setup(ctx context.Context, getenv func(string) string, version string) (shutdown func(context.Context) error, err error) {
	none := func(context.Context) error { return nil }
	if !Configured(getenv) {
		return none, nil
	}
	exp, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return none, fmt.Errorf("tracing: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", ServiceName), attribute.String("service.version", version)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return none, fmt.Errorf("tracing: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	Install(tp)
	return tp.Shutdown, nil
}

// Install makes tp the global tracer provider, W3C trace context (no
// baggage) the propagator, and turns the middleware and hooks built after
// it on. Tests install an SDK provider with an in-memory exporter; they
// restore with Uninstall.
func Install(tp trace.TracerProvider) {
	global.set(tp)
	otel.SetTextMapPropagator(Propagator)
	enabled.Store(true)
}

// Uninstall puts the no-op tracer back (for tests).
func Uninstall() {
	global.set(noop.NewTracerProvider())
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator())
	enabled.Store(false)
}

// Propagator is the one promptd speaks: traceparent and tracestate in
// and out. Incoming baggage is dropped, never carried on.
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}
