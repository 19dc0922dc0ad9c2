package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"gorm.io/gorm"
)

// DirectObserver is a GORM plugin that also sees the statements hot
// paths run past GORM's statement builder (ExecDirect, QueryDirect):
// telemetry's SQL spans, a test's statement counter. StartDirect is
// called before the statement with its context, tx (its connection) and
// the statement's text (placeholders, never values); it returns the
// context to run it in and a function called with its outcome (or nil).
type DirectObserver interface {
	gorm.Plugin
	StartDirect(ctx context.Context, tx *gorm.DB, query string) (context.Context, func(error))
}

// ExecDirect runs a statement on tx's connection (its transaction, or
// the pool) with tx's context, without GORM's statement building (the
// clause expression, the statement clone and its variables allocate per
// call what a fixed statement does not need). What GORM's callbacks give
// every statement it still gets: each DirectObserver plugin of tx (the
// trace span) and the slow-statement log.
func ExecDirect(tx *gorm.DB, query string, args ...any) (sql.Result, error) {
	ctx, done := direct(tx, query)
	begin := time.Now()
	res, err := tx.Statement.ConnPool.ExecContext(ctx, query, args...)
	done(err)
	tx.Logger.Trace(ctx, begin, func() (string, int64) {
		if res == nil {
			return query, -1
		}
		n, _ := res.RowsAffected()
		return query, n
	}, err)
	return res, err
}

// QueryDirect is ExecDirect for a statement that returns rows; the
// caller closes them. Outside a transaction it goes through GORM's row
// callbacks instead (still no reflection: the caller scans), so that
// SQLite's read pool (gorm's dbresolver, which picks the connection in a
// callback) serves it.
func QueryDirect(tx *gorm.DB, query string, args ...any) (*sql.Rows, error) {
	if _, inTx := tx.Statement.ConnPool.(gorm.TxCommitter); !inTx {
		return tx.Raw(query, args...).Rows()
	}
	ctx, done := direct(tx, query)
	begin := time.Now()
	rows, err := tx.Statement.ConnPool.QueryContext(ctx, query, args...)
	done(err)
	tx.Logger.Trace(ctx, begin, func() (string, int64) { return query, -1 }, err)
	return rows, err
}

// direct starts tx's observers for one statement.
func direct(tx *gorm.DB, query string) (context.Context, func(error)) {
	ctx := tx.Statement.Context
	if ctx == nil {
		ctx = context.Background()
	}
	var dones []func(error)
	for _, p := range tx.Config.Plugins {
		if o, ok := p.(DirectObserver); ok {
			var done func(error)
			ctx, done = o.StartDirect(ctx, tx, query)
			if done != nil {
				dones = append(dones, done)
			}
		}
	}
	switch len(dones) {
	case 0:
		return ctx, func(error) {}
	case 1:
		return ctx, dones[0]
	}
	return ctx, func(err error) {
		for _, d := range dones {
			d(err)
		}
	}
}
