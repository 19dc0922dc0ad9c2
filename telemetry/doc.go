// Package telemetry sets up OpenTelemetry tracing for promptd from the
// standard OTEL_* variables and holds the few helpers the other packages
// share: the trace and span ids of a context (for audit events and log
// lines), an slog handler that adds them to every line, and the hooks that
// trace SQL (GORM) and Redis calls.
//
// Tracing is off unless OTEL_TRACES_EXPORTER or an OTEL_EXPORTER_OTLP_*
// endpoint is set; OTEL_SDK_DISABLED=true wins. Off, nothing is installed:
// the global tracer stays OpenTelemetry's no-op, no middleware is mounted
// and no SQL or Redis hook is registered.
package telemetry
