package telemetry_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/promptd/promptd/telemetry"
)

// Unconfigured, Setup installs nothing: tracing stays off.
func ExampleSetup() {
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}
	shutdown, err := telemetry.Setup(context.Background(), func(k string) string { return env[k] }, "dev")
	if err != nil {
		panic(err)
	}
	defer func() { _ = shutdown(context.Background()) }()
	fmt.Println("configured:", telemetry.Configured(func(k string) string { return env[k] }), "enabled:", telemetry.Enabled())
	// Output: configured: false enabled: false
}

// A test installs an SDK provider; log lines within a span carry its
// trace and span ids, as audit events store them.
func ExampleLogHandler() {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	telemetry.Install(tp)
	defer telemetry.Uninstall()

	ctx, span := tp.Tracer("example").Start(context.Background(), "request")
	traceID, spanID := telemetry.IDs(ctx)
	log := slog.New(telemetry.LogHandler(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			switch {
			case a.Key == slog.TimeKey:
				return slog.Attr{}
			case a.Key == "trace_id" && a.Value.String() == traceID:
				return slog.String(a.Key, "<the span's trace id>")
			case a.Key == "span_id" && a.Value.String() == spanID:
				return slog.String(a.Key, "<the span's id>")
			}
			return a
		}})))
	log.InfoContext(ctx, "switched", "env", "prod")
	span.End()
	fmt.Println("enabled:", telemetry.Enabled(), "spans:", len(exp.GetSpans()))
	// Output:
	// level=INFO msg=switched env=prod trace_id="<the span's trace id>" span_id="<the span's id>"
	// enabled: true spans: 1
}
