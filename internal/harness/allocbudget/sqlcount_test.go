package allocbudget

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

// requestKey marks the context of a request whose SQL is counted, so the
// statements of the runtime's background loops (the change feed's poll,
// the event batcher, exposures) are not.
type requestKey struct{}

// sqlCounter counts the SQL statements the measured requests run through
// GORM (its callbacks: create, query, update, delete, row, raw) and the
// transactions they run in (each a BEGIN and a COMMIT or ROLLBACK more).
// Statements run past GORM's builder (sqlstore.ExecDirect, QueryDirect)
// are counted through a sqlstore.DirectObserver plugin.
type sqlCounter struct {
	on    atomic.Bool
	mu    sync.Mutex
	stmts int
	kinds map[string]int
	txs   map[gorm.TxCommitter]struct{}
}

func newSQLCounter() *sqlCounter {
	return &sqlCounter{kinds: map[string]int{}, txs: map[gorm.TxCommitter]struct{}{}}
}

func (c *sqlCounter) install(tb testing.TB, db *gorm.DB) {
	tb.Helper()
	count := func(kind string) func(*gorm.DB) {
		return func(tx *gorm.DB) {
			ctx := tx.Statement.Context
			if !c.on.Load() || ctx == nil || ctx.Value(requestKey{}) == nil {
				return
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			c.stmts++
			c.kinds[kind]++
			if t, ok := tx.Statement.ConnPool.(gorm.TxCommitter); ok {
				c.txs[t] = struct{}{}
			}
		}
	}
	if err := db.Use(directCounter{c}); err != nil {
		tb.Fatal(err)
	}
	cb := db.Callback()
	for _, err := range []error{
		cb.Create().After("gorm:create").Register("allocbudget:count", count("create")),
		cb.Query().After("gorm:query").Register("allocbudget:count", count("query")),
		cb.Update().After("gorm:update").Register("allocbudget:count", count("update")),
		cb.Delete().After("gorm:delete").Register("allocbudget:count", count("delete")),
		cb.Row().After("gorm:row").Register("allocbudget:count", count("row")),
		cb.Raw().After("gorm:raw").Register("allocbudget:count", count("raw")),
	} {
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// directCounter counts the statements run past GORM's builder
// (sqlstore.ExecDirect, QueryDirect), which the callbacks do not see.
type directCounter struct{ c *sqlCounter }

func (directCounter) Name() string                 { return "allocbudget:direct" }
func (directCounter) Initialize(db *gorm.DB) error { return nil }

func (d directCounter) StartDirect(ctx context.Context, tx *gorm.DB, _ string) (context.Context, func(error)) {
	if !d.c.on.Load() || ctx.Value(requestKey{}) == nil {
		return ctx, nil
	}
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	d.c.stmts++
	d.c.kinds["direct"]++
	if t, ok := tx.Statement.ConnPool.(gorm.TxCommitter); ok {
		d.c.txs[t] = struct{}{}
	}
	return ctx, nil
}

var _ sqlstore.DirectObserver = directCounter{}

// sqlResult is the SQL of one request (one iteration), averaged.
type sqlResult struct {
	Statements   float64
	Transactions float64
	Kinds        string // statements by GORM callback, per op
}

// RoundTrips counts a transaction's BEGIN and COMMIT as one each.
func (r sqlResult) RoundTrips() float64 { return r.Statements + 2*r.Transactions }

func (r sqlResult) String() string {
	return fmt.Sprintf("%.1f SQL round trips/op (%.1f statements: %s; %.1f transactions)", r.RoundTrips(), r.Statements, r.Kinds, r.Transactions)
}

// countSQL runs p on a fresh server with the counter installed: warm
// iterations, then n counted ones.
func countSQL(tb testing.TB, p hotPath, warm, n int) sqlResult {
	tb.Helper()
	c := newSQLCounter()
	o := serverOptions{sql: c, redisLocks: p.redis}
	it := p.start(tb, o)
	plain := func(f func()) { f() }
	for i := 0; i < warm; i++ {
		if err := it(i, plain); err != nil {
			tb.Fatalf("warm-up %d: %v", i, err)
		}
	}
	counted := func(f func()) { c.on.Store(true); f(); c.on.Store(false) }
	for i := 0; i < n; i++ {
		if err := it(warm+i, counted); err != nil {
			tb.Fatalf("iteration %d: %v", warm+i, err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	kinds := make([]string, 0, len(c.kinds))
	for k, v := range c.kinds {
		kinds = append(kinds, fmt.Sprintf("%s %.1f", k, float64(v)/float64(n)))
	}
	sort.Strings(kinds)
	if len(kinds) == 0 {
		kinds = []string{"none"}
	}
	return sqlResult{Statements: float64(c.stmts) / float64(n), Transactions: float64(len(c.txs)) / float64(n), Kinds: strings.Join(kinds, ", ")}
}
