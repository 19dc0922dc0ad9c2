//go:build !race

package allocbudget

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"net/http"
	"os"
	"runtime"
	"testing"
)

// budgetsPath is the recorded budget of every hot path.
const budgetsPath = "testdata/budgets.json"

var update = flag.Bool("update", false, "rewrite "+budgetsPath+" from this run's measurement (or PROMPTD_ALLOC_UPDATE=1)")

func updating() bool { return *update || os.Getenv("PROMPTD_ALLOC_UPDATE") == "1" }

// budget is one path's recorded cost per operation.
type budget struct {
	About  string  `json:"about"`
	Allocs float64 `json:"allocs_per_op"`
	Bytes  float64 `json:"bytes_per_op"`
	// SQL is the SQL round trips per operation (statements, and a BEGIN
	// and a COMMIT per transaction); absent for a path without SQL.
	SQL *float64 `json:"sql_round_trips_per_op,omitempty"`
}

type budgetFile struct {
	Comment []string          `json:"comment"`
	Go      string            `json:"go"`
	Paths   map[string]budget `json:"paths"`
}

// The headroom: a path fails when it allocates more than its budget plus
// max(2, 3 %) allocations, or more than its budget plus max(1 KiB, 5 %)
// bytes, per operation, or runs more SQL round trips than recorded (a
// count of statements has no noise).
func allowance(allocs float64) float64 { return math.Max(2, 0.03*allocs) }

func bytesAllowance(bytes float64) float64 { return math.Max(1024, 0.05*bytes) }

// overBudget reports how r exceeds b, or "" when it does not.
// Counts are compared at one decimal, as recorded (a stray allocation in
// 300 runs is not one per request).
func overBudget(name string, r result, b budget) string {
	r.Allocs = math.Round(r.Allocs*10) / 10
	var msg string
	if limit := b.Allocs + allowance(b.Allocs); r.Allocs > limit {
		msg += fmt.Sprintf("%s: %.1f allocs/op, budget %.1f (fails above %.1f)", name, r.Allocs, b.Allocs, limit)
	}
	if limit := b.Bytes + bytesAllowance(b.Bytes); r.Bytes > limit {
		if msg != "" {
			msg += "; "
		}
		msg += fmt.Sprintf("%s: %.0f B/op, budget %.0f (fails above %.0f)", name, r.Bytes, b.Bytes, limit)
	}
	return msg
}

func readBudgets(tb testing.TB) budgetFile {
	tb.Helper()
	var f budgetFile
	b, err := os.ReadFile(budgetsPath)
	if err != nil {
		if updating() && os.IsNotExist(err) {
			return budgetFile{Paths: map[string]budget{}}
		}
		tb.Fatal(err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		tb.Fatalf("%s: %v", budgetsPath, err)
	}
	if f.Paths == nil {
		f.Paths = map[string]budget{}
	}
	return f
}

func writeBudgets(tb testing.TB, f budgetFile) {
	tb.Helper()
	f.Comment = []string{
		"Allocations per operation of promptd's hot paths, on the request's goroutine (docs/performance.md).",
		"Written by: PROMPTD_ALLOC_UPDATE=1 go test -count=1 -run TestAllocBudgets ./internal/harness/allocbudget/ (with Redis: see docs/performance.md).",
		"A path fails above allocs_per_op + max(2, 3%), bytes_per_op + max(1024, 5%), or sql_round_trips_per_op.",
	}
	f.Go = runtime.Version()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(f); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(budgetsPath, buf.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("wrote %s", budgetsPath)
}

// sqlPaths are the paths whose SQL round trips are counted (and budgeted).
var sqlPaths = map[string]bool{"resolve": true, "assemble": true, "turn-append": true, "turn-append-leased": true,
	"session-lease": true, "version-create": true, "board-claim-complete": true}

// TestAllocBudgets_hotPathsStayWithinTheirRecordedBudget measures every hot
// path (allocations and bytes per operation on the request's goroutine;
// SQL round trips per request) and fails naming each path over its
// recorded budget plus the headroom. With -update or
// PROMPTD_ALLOC_UPDATE=1 it rewrites the budgets instead.
func TestAllocBudgets_hotPathsStayWithinTheirRecordedBudget(t *testing.T) {
	f := readBudgets(t)
	recorded := f.Go
	for _, p := range hotPaths {
		t.Run(p.name, func(t *testing.T) {
			r := runPath(t, p, serverOptions{})
			if r.Unattributed != 0 {
				t.Errorf("%s: %d allocations have a stack as deep as the profile records and no measuring frame: raise GODEBUG=profstackdepth", p.name, r.Unattributed)
			}
			var sql *sqlResult
			if sqlPaths[p.name] {
				s := countSQL(t, p, 5, 20)
				sql = &s
			}
			msg := fmt.Sprintf("%s: %v", p.name, r)
			if sql != nil {
				msg += "; " + sql.String()
			}
			t.Log(msg)
			b, ok := f.Paths[p.name]
			if updating() {
				b = budget{About: p.about, Allocs: math.Round(r.Allocs*10) / 10, Bytes: math.Round(r.Bytes)}
				if sql != nil {
					rt := sql.RoundTrips()
					b.SQL = &rt
				}
				f.Paths[p.name] = b
				return
			}
			if !ok {
				t.Fatalf("%s: no budget in %s; record one: PROMPTD_ALLOC_UPDATE=1 go test -run TestAllocBudgets ./internal/harness/allocbudget/", p.name, budgetsPath)
			}
			if over := overBudget(p.name, r, b); over != "" {
				t.Errorf("%s (budgets recorded with %s, this is %s)", over, recorded, runtime.Version())
			}
			if sql != nil && b.SQL != nil && sql.RoundTrips() > *b.SQL {
				t.Errorf("%s: %.1f SQL round trips/op, budget %.1f", p.name, sql.RoundTrips(), *b.SQL)
			}
		})
	}
	if updating() && !t.Failed() {
		writeBudgets(t, f)
	}
}

// leak keeps the control's extra allocations: they must be on the heap.
var leak [][]byte

// TestAllocBudgets_control_aPathThatAllocatesMoreFailsTheCheck proves the
// check can fail. The middleware path is measured as it is, and that
// measurement is taken as its budget; then through a wrapper handler that
// allocates extra times per request: as many as the headroom absorbs
// passes, one more is reported over budget. The product is unchanged.
func TestAllocBudgets_control_aPathThatAllocatesMoreFailsTheCheck(t *testing.T) {
	const name = "middleware-healthz"
	var b budget
	for _, extra := range []int{0, -1, -2} { // 0: the budget; then within the headroom, and one more
		switch extra {
		case -1:
			extra = int(allowance(b.Allocs))
		case -2:
			extra = int(allowance(b.Allocs)) + 1
		}
		s := newServer(t, serverOptions{})
		inner := s.h
		s.h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for range extra {
				leak = append(leak[:0], make([]byte, 16))
			}
			inner.ServeHTTP(w, r)
		})
		r := measure(t, warmIterations, measuredIterations, func(i int, mark func(func())) error {
			return s.serve(mark, request("GET", "/healthz", "", ""), 200, nil)
		})
		leak = nil
		if extra == 0 {
			b = budget{Allocs: math.Round(r.Allocs*10) / 10, Bytes: math.Round(r.Bytes)}
			t.Logf("%s as it is: %v: its budget", name, r)
			continue
		}
		over := overBudget(name, r, b)
		t.Logf("%s + %d allocations per request: %v; the check says %q", name, extra, r, over)
		within := extra <= int(allowance(b.Allocs))
		switch {
		case !within && over == "":
			t.Errorf("%d extra allocations per request (headroom %.0f): %v, not reported over the budget %.1f", extra, allowance(b.Allocs), r, b.Allocs)
		case within && over != "":
			t.Errorf("%d extra allocations per request are within the headroom, yet: %s", extra, over)
		}
	}
}
