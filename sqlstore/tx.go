package sqlstore

import (
	"context"

	"gorm.io/gorm"
)

// CommitHook runs inside a write's transaction, after the write and before
// the commit, with the write's result. An error rolls the whole transaction
// back. The api uses it to reserve an Idempotency-Key and store the answer
// in the same transaction as the write it answers.
type CommitHook func(ctx context.Context, tx *gorm.DB, result any) error

type hooksKey struct{}

// WithCommitHook returns a context whose next Transact runs hook.
func WithCommitHook(ctx context.Context, hook CommitHook) context.Context {
	hooks, _ := ctx.Value(hooksKey{}).([]CommitHook)
	return context.WithValue(ctx, hooksKey{}, append(hooks[:len(hooks):len(hooks)], hook))
}

// Transact runs fn in a transaction, then the commit hooks of ctx with
// fn's result, then commits. Errors are translated (see Translate).
func Transact[T any](ctx context.Context, db *gorm.DB, fn func(tx *gorm.DB) (T, error)) (T, error) {
	var out T
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var err error
		if out, err = fn(tx); err != nil {
			return err
		}
		hooks, _ := ctx.Value(hooksKey{}).([]CommitHook)
		for _, h := range hooks {
			if err := h(ctx, tx, out); err != nil {
				return err
			}
		}
		return nil
	})
	return out, Translate(err)
}
