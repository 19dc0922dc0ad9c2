package sqlstore

import (
	"context"
	"database/sql"

	"gorm.io/gorm"
)

// Then is work a caller adds to a write's own transaction: the write
// runs it after its own statements and before the commit, with its
// result, and an error from it rolls the whole write back. A domain write
// that answers a request takes its Thens as its last, variadic parameter,
// so that the signature says the call may carry the caller's work into its
// transaction (an Idempotency-Key's stored answer, a change request marked
// applied); it hands them to the Transact that commits the write, and to
// no other. A write that retries runs them in every attempt: the attempt
// that commits is the one whose work stays.
type Then[T any] func(tx *gorm.DB, result T) error

// Transact runs fn in a transaction, then each of then (nil ones are
// skipped) with fn's result, then commits. Errors are translated (see
// Translate).
func Transact[T any](ctx context.Context, db *gorm.DB, fn func(tx *gorm.DB) (T, error), then ...Then[T]) (T, error) {
	return transact(ctx, db, nil, fn, then)
}

// TransactIsolated is Transact at the isolation level given, on MySQL and
// MariaDB (SQLite has one writer and ignores it). READ COMMITTED takes no
// gap locks and releases the row locks of rows a locking read examined but
// did not match: claim queues use it so that SKIP LOCKED scans do not
// deadlock with the inserts of each other's index entries.
func TransactIsolated[T any](ctx context.Context, db *gorm.DB, level sql.IsolationLevel, fn func(tx *gorm.DB) (T, error), then ...Then[T]) (T, error) {
	if Dialect(db) != MySQL {
		return transact(ctx, db, nil, fn, then)
	}
	return transact(ctx, db, &sql.TxOptions{Isolation: level}, fn, then)
}

func transact[T any](ctx context.Context, db *gorm.DB, opts *sql.TxOptions, fn func(tx *gorm.DB) (T, error), then []Then[T]) (T, error) {
	var out T
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var err error
		if out, err = fn(tx); err != nil {
			return err
		}
		for _, h := range then {
			if h == nil {
				continue
			}
			if err := h(tx, out); err != nil {
				return err
			}
		}
		return nil
	}, optsOf(opts)...)
	return out, Translate(err)
}

func optsOf(o *sql.TxOptions) []*sql.TxOptions {
	if o == nil {
		return nil
	}
	return []*sql.TxOptions{o}
}
