// Package client is the Go client of promptd's HTTP API (v1): typed
// requests and answers for every route, problem details decoded into
// *Error values that errors.Is matches against one sentinel per code
// (errors.Is(err, client.ErrVersionConflict)), an Idempotency-Key on every
// POST that creates or appends, bounded retries that are safe to make, a
// runtime-side PromptCache that revalidates with If-None-Match and keeps
// the last good prompt through an outage, HoldLease, a session lease
// kept alive at TTL/3 whose loss cancels a context, and intents with the
// board batches written under them (RegisterIntent, ApplyBatch and its
// commit proof).
//
// The package depends on net/http and encoding/json only.
package client
