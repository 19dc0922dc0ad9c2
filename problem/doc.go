// Package problem is promptd's error vocabulary: the stable codes of the
// HTTP contract with their statuses (one table, Codes, and a constant per
// code), the Problem a failed call is answered with, and the error types
// the domain packages share (InvalidError, RevisionConflictError,
// LimitError). It imports only the standard library, so every package may
// use it.
//
// Each error a promptd package returns carries its code: a Sentinel
// (New) for a fixed error, a Problem method (Coded) for a typed one. Of
// finds it in any error chain. The HTTP transport (api) renders a Problem
// as application/problem+json; the runtime records the Problem of a
// change request whose write failed, so an approval in process records
// the same code as one over HTTP. It knows nothing of routing; statuses
// are plain numbers.
package problem
