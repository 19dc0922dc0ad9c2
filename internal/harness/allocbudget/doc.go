// Package allocbudget holds the allocation budgets of promptd's hot paths
// and the test that enforces them (tests only; nothing here is shipped).
//
// Each hot path (resolve, assemble, turn append, session leases, version
// create, board claim and complete, the Redis lock cycle, the middleware
// chain) runs in process, as a request really runs: an http.Handler built
// by api.New over promptd.New, called through ServeHTTP, no network. The
// allocations counted are those made on the request's goroutine while the
// request runs (the heap profile at MemProfileRate 1, its records kept
// when their stack holds the measuring frame), so the background loops of
// the runtime (the change feed's poll, the event batcher, webhooks,
// exposures) do not add noise: allocation counts are stable on a shared,
// noisy machine where times are not.
//
// testdata/budgets.json records allocs/op and bytes/op per path;
// TestAllocBudgets_hotPathsStayWithinTheirRecordedBudget fails when a path
// allocates more than its budget plus the headroom (see allowance). To
// record new budgets after an intended change:
//
//	PROMPTD_ALLOC_UPDATE=1 ./scripts/test.sh -count=1 -run TestAllocBudgets ./internal/harness/allocbudget/
//
// The race detector changes allocation counts, so the comparison is built
// only without it (budget_test.go is !race); see docs/performance.md.
package allocbudget
