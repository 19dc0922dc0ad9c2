// Package api is promptd's HTTP interface (api/openapi.yaml): an Echo server
// whose routes are all listed in routes.go, one file per resource with its
// request and response types next to its handlers, and whose errors all
// become RFC 9457 problem details in one place (errors.go, with the codes
// of package problem).
//
// Handlers decode their body with one strict helper (decode.go: malformed
// JSON is invalid_json, an unknown member or a wrong type invalid_field
// naming it), call the domain (promptstore, release, session, locks) and
// return its errors. The
// error handler maps domain errors to a code and an HTTP status
// (problem.Of and problem.Codes, the one table of statuses in promptd),
// logs only unexpected errors, and never shows their text to the client.
//
// Every request passes through one middleware that gives it a request id
// (X-Request-Id), recovers panics, logs the request (never its headers or
// tokens; the token's name instead) and records its latency by route
// template; then through the route's body limit (1 MiB, /v1/import its
// own). /v1 routes then check the bearer token and its role (auth.go) and
// put the token's name in the context for audit events. Routes that
// create or append (versions, import, releases, sessions, turns, state
// entries) take an Idempotency-Key (idempotency.go): the answer is
// recorded in the write's own transaction (a sqlstore.Then handed to it) and
// replayed byte for byte. Lease routes never take one; lease tokens travel
// only in bodies and the Lease-Token header, never in URLs or logs.
//
// openapi.yaml, served at /openapi.yaml, documents every route; a test
// keeps it and routes.go in step and checks answers against its schemas.
package api
