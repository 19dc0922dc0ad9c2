// Package api is promptd's HTTP interface: an Echo server whose routes are
// all listed in routes.go, whose errors all become RFC 9457 problem details
// in one place (errors.go), and whose operational endpoints (/healthz,
// /readyz, /metrics) report on the stores cmd/promptd wires in.
//
// Handlers return errors; they never write error responses themselves.
// The error handler maps domain errors to a code and an HTTP status (the
// one table of statuses in promptd), logs only unexpected errors, and
// never shows their text to the client.
//
// Every request passes through one middleware that recovers panics, logs
// the request (never its headers or tokens), and records its latency by
// route template; then through a 1 MiB body limit.
package api
