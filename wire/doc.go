// Package wire holds the shapes promptd's HTTP answers and requests have,
// once, for the server and the Go client alike. It imports only the
// standard library, so a runtime that imports the client pulls in no SQL
// driver or server code through it.
//
// A type here is what api/openapi.yaml names (its schema is named in the
// type's comment); the server fills it from the domain and encodes it, the
// client decodes it. Times are Time: RFC 3339 in UTC with milliseconds, as
// every answer shows them.
package wire
