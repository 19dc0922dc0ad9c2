package promptd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/promptd/promptd/api/idempotency"
	"github.com/promptd/promptd/internal/canonjson"
	"github.com/promptd/promptd/problem"
	"github.com/promptd/promptd/sqlstore"
)

// Call names one idempotent write of an embedding program: who makes it,
// the operation, the key the caller chose for it and the request the key
// is bound to. It is the in-process form of an HTTP request's
// Idempotency-Key: the outcomes live in the same table, for the same TTL
// (Options.Idempotency), swept by Run; a Call never matches an HTTP
// request's key (their scopes differ).
type Call struct {
	// Caller names who calls (a service or token name, never a secret).
	Caller string
	// Operation names the write, for example "sessions.append"; the same
	// key under two operations is two keys. Put the target in it (or in
	// Request): "sessions.append/s-1".
	Operation string
	// Key is the caller's key: 1..255 printable ASCII characters.
	Key string
	// Request is what the key is bound to, encoded as JSON and compared
	// canonically: the same key with another request is
	// idempotency.ErrKeyReused (422 idempotency_key_reused).
	Request any
}

// maxCallKey bounds Call.Key, as the API bounds Idempotency-Key.
const maxCallKey = 255

func (c Call) key() (idempotency.Key, error) {
	if c.Operation == "" {
		return idempotency.Key{}, problem.Invalid(problem.InvalidField, "operation", "a Call names its operation")
	}
	if len(c.Key) == 0 || len(c.Key) > maxCallKey {
		return idempotency.Key{}, problem.Invalid(problem.InvalidField, "key", "key must be 1..%d printable ASCII characters", maxCallKey)
	}
	for i := 0; i < len(c.Key); i++ {
		if c.Key[i] < 0x20 || c.Key[i] > 0x7e {
			return idempotency.Key{}, problem.Invalid(problem.InvalidField, "key", "key must be 1..%d printable ASCII characters", maxCallKey)
		}
	}
	body, err := json.Marshal(c.Request)
	if err != nil {
		return idempotency.Key{}, problem.Invalid(problem.InvalidField, "request", "request must encode as JSON: %v", err)
	}
	hash := idempotency.HashBody(body)
	if canon, err := canonjson.Canonical(body); err == nil {
		hash = idempotency.HashBody(canon)
	}
	// The method "call" is no HTTP method: no request's key shares a scope
	// with a Call's.
	return idempotency.NewKey(c.Caller, "call", c.Operation, nil, c.Key, hash), nil
}

// Idempotent runs write at most once for call, across instances and
// restarts, for the outcome's TTL: the first run's result is recorded in
// the transaction of the write itself, so it is stored exactly when the
// write commits; a repeat returns that result (replayed true) without
// running write. write gets the record to hand to its domain write (every
// domain write takes a sqlstore.Then: Sessions.Append, Boards.Create, ...);
// a write that does not hand it on has its result saved after it returns,
// in a transaction of its own (then a crash in between can let a retry
// write again: hand it on).
//
// Errors are not recorded: a failed write wrote nothing, and a repeat runs
// it again. A repeat while the first run is in this process is
// idempotency.ErrInProgress (409); the same key with another request is
// idempotency.ErrKeyReused (422). When another instance with the same key
// commits first, its result is returned (replayed true).
func Idempotent[T any](ctx context.Context, rt *Runtime, call Call, write func(record sqlstore.Then[T]) (T, error)) (result T, replayed bool, err error) {
	k, err := call.key()
	if err != nil {
		return result, false, err
	}
	store := rt.Idempotency
	end, err := store.Begin(k)
	if err != nil {
		return result, false, err
	}
	defer end()
	if res, ok, err := lookupResult[T](ctx, store, k); err != nil || ok {
		return res, ok, err
	}
	recorded := false
	result, err = write(func(tx *gorm.DB, r T) error {
		b, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("promptd: recording the result of %s: %w", call.Operation, err)
		}
		if err := store.Insert(ctx, tx, k, idempotency.Response{Status: 200, ContentType: "application/json", Body: b}); err != nil {
			return err
		}
		recorded = true // the last run is the committed one: a write that fails returns its error
		return nil
	})
	if err != nil {
		// Another instance with the key may have committed first (the
		// record's insert, or the conflict its write caused, failed this one).
		res, ok, lerr := lookupResult[T](context.WithoutCancel(ctx), store, k)
		switch {
		case ok:
			return res, true, nil
		case errors.Is(lerr, idempotency.ErrKeyReused):
			return result, false, lerr
		}
		return result, false, err
	}
	if !recorded {
		b, merr := json.Marshal(result)
		if merr != nil {
			return result, false, fmt.Errorf("promptd: recording the result of %s: %w", call.Operation, merr)
		}
		if serr := store.Save(context.WithoutCancel(ctx), k, idempotency.Response{Status: 200, ContentType: "application/json", Body: b}); serr != nil {
			rt.log.WarnContext(ctx, "storing the result of an idempotent call failed", "operation", call.Operation, "err", serr)
		}
	}
	return result, false, nil
}

// lookupResult is the result recorded for k, if any.
func lookupResult[T any](ctx context.Context, store *idempotency.Store, k idempotency.Key) (res T, ok bool, err error) {
	rec, err := store.Lookup(ctx, k)
	if err != nil || rec == nil {
		return res, false, err
	}
	if rec.Status != 200 || rec.ContentType != "application/json" {
		// Not a Call's record: scopes keep them apart, so this is a store
		// fault; refuse rather than run the write a second time.
		return res, false, fmt.Errorf("promptd: the record of this call is not a call result (status %d)", rec.Status)
	}
	if err := json.Unmarshal(rec.Body, &res); err != nil {
		return res, false, fmt.Errorf("promptd: decoding the recorded result: %w", err)
	}
	return res, true, nil
}
