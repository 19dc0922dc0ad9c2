package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"

	"gorm.io/gorm"
)

// ErrHookType: the context carries a commit hook registered for another
// result type than the transaction's. A programming error (the write's
// result type changed, or a transaction that does not answer the request
// runs with its context); Transact fails before it begins, so nothing is
// written.
var ErrHookType = errors.New("sqlstore: the commit hook is registered for another result type")

// commitHook is one OnCommit registration: run is a
// func(context.Context, *gorm.DB, T) error for the result type named
// result.
type commitHook struct {
	result string
	run    any
	spent  atomic.Bool // its transaction committed
}

type hooksKey struct{}

// OnCommit returns a context whose write, the Transact[T] that commits
// with it, runs hook inside its transaction, after the write and before
// the commit, with the write's result. An error from hook rolls the whole
// transaction back. The api uses it to reserve an Idempotency-Key and store
// the answer in the same transaction as the write it answers.
//
// The hook is typed: a Transact with ctx whose result is not T fails with
// ErrHookType. A transaction that rolls back leaves the hook for the next
// attempt; once one commits, the hook is spent and later transactions of
// ctx do not run it.
func OnCommit[T any](ctx context.Context, hook func(ctx context.Context, tx *gorm.DB, result T) error) context.Context {
	hooks, _ := ctx.Value(hooksKey{}).([]*commitHook)
	h := &commitHook{result: typeName[T](), run: hook}
	return context.WithValue(ctx, hooksKey{}, append(hooks[:len(hooks):len(hooks)], h))
}

// WithoutCommitHooks returns ctx without its commit hooks, for a
// transaction that is not the write the request answers (a side write on
// the way to it, a record of its own).
func WithoutCommitHooks(ctx context.Context) context.Context {
	if ctx.Value(hooksKey{}) == nil {
		return ctx
	}
	return context.WithValue(ctx, hooksKey{}, []*commitHook(nil))
}

// Transact runs fn in a transaction, then the commit hooks of ctx (see
// OnCommit) with fn's result, then commits. Errors are translated (see
// Translate).
func Transact[T any](ctx context.Context, db *gorm.DB, fn func(tx *gorm.DB) (T, error)) (T, error) {
	return transact(ctx, db, nil, fn)
}

// TransactIsolated is Transact at the isolation level given, on MySQL and
// MariaDB (SQLite has one writer and ignores it). READ COMMITTED takes no
// gap locks and releases the row locks of rows a locking read examined but
// did not match: claim queues use it so that SKIP LOCKED scans do not
// deadlock with the inserts of each other's index entries.
func TransactIsolated[T any](ctx context.Context, db *gorm.DB, level sql.IsolationLevel, fn func(tx *gorm.DB) (T, error)) (T, error) {
	if Dialect(db) != MySQL {
		return transact(ctx, db, nil, fn)
	}
	return transact(ctx, db, &sql.TxOptions{Isolation: level}, fn)
}

func transact[T any](ctx context.Context, db *gorm.DB, opts *sql.TxOptions, fn func(tx *gorm.DB) (T, error)) (T, error) {
	var out T
	regs, hooks, err := hooksFor[T](ctx)
	if err != nil {
		return out, err
	}
	err = db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var err error
		if out, err = fn(tx); err != nil {
			return err
		}
		for _, h := range hooks {
			if err := h(ctx, tx, out); err != nil {
				return err
			}
		}
		return nil
	}, optsOf(opts)...)
	if err == nil {
		for _, r := range regs {
			r.spent.Store(true)
		}
	}
	return out, Translate(err)
}

// hooksFor returns the live hooks of ctx, typed for T, or ErrHookType when
// one is registered for another type.
func hooksFor[T any](ctx context.Context) ([]*commitHook, []func(context.Context, *gorm.DB, T) error, error) {
	all, _ := ctx.Value(hooksKey{}).([]*commitHook)
	var (
		regs  []*commitHook
		hooks []func(context.Context, *gorm.DB, T) error
	)
	for _, r := range all {
		if r.spent.Load() {
			continue
		}
		h, ok := r.run.(func(context.Context, *gorm.DB, T) error)
		if !ok {
			return nil, nil, fmt.Errorf("%w: the hook takes %s, the transaction returns %s "+
				"(a transaction that does not answer the request runs with sqlstore.WithoutCommitHooks)", ErrHookType, r.result, typeName[T]())
		}
		regs, hooks = append(regs, r), append(hooks, h)
	}
	return regs, hooks, nil
}

func optsOf(o *sql.TxOptions) []*sql.TxOptions {
	if o == nil {
		return nil
	}
	return []*sql.TxOptions{o}
}

func typeName[T any]() string { return reflect.TypeFor[T]().String() }
