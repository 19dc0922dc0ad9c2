// Package idempotency keeps the outcomes of requests sent with an
// Idempotency-Key, so that a client retrying after a timeout gets the first
// answer again instead of having the work done twice (api/openapi.yaml, Conventions).
//
// A Key is scoped (the caller's name, the method, the concrete path and the
// client's key, hashed together) and bound to the hash of the request body.
// The first final outcome is recorded:
//
//   - a successful write records its answer with Store.Insert in a
//     sqlstore.Then handed to the write explicitly, inside the write's own
//     transaction, so the answer exists if and only if the write does;
//   - a validation failure records its problem body in a small
//     transaction of its own (Store.Save).
//
// Lookup finds a live record: the same body hash replays it, another body
// hash is ErrKeyReused. Begin marks a scope in progress in this process
// (ErrInProgress for a concurrent repeat); across instances a concurrent
// repeat waits on the record's row lock inside its transaction, fails on
// the duplicate key, and the caller replays what the winner stored.
//
// Records live for the store's TTL; Sweep deletes expired ones.
package idempotency
