// Package problem is promptd's error vocabulary: the stable codes of the
// HTTP contract with their statuses (one table, Codes), the Problem a
// failed call is answered with, and Of, the one function that maps any
// error a promptd package returns to its Problem.
//
// It is used wherever an error must become a code: the HTTP transport
// (api) renders a Problem as application/problem+json; the runtime records
// the Problem of a change request whose write failed, so an approval in
// process records the same code as one over HTTP. It knows nothing of
// routing; statuses are plain numbers.
package problem
