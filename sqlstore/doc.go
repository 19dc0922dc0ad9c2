// Package sqlstore opens promptd's SQL source of truth and keeps its schema.
//
// Open connects to MySQL/MariaDB (production, several promptd instances) or
// to an SQLite file (the embedded default, one instance), tuned for how
// promptd writes: every write is a short transaction with a revision
// condition, so SQLite runs in WAL mode with a busy timeout and one
// connection (writes serialise in process instead of failing with
// SQLITE_BUSY), and MySQL reports matched rather than changed rows, so
// "rows affected" means the same thing on both.
//
// Migrate applies versioned schema migrations at start: each component
// (promptstore, release, session, ...) numbers its own migrations, applied
// ones are recorded in the schema_migrations table, and a database whose
// schema is newer than the running binary is refused rather than used.
// Several instances starting at once against one MySQL take turns through
// a named server lock.
//
// Translate turns driver errors into two sentinels the domain packages act
// on: ErrDuplicate (a unique key said no: the row exists) and
// ErrUnavailable (the database could not be reached or was busy: answer
// 503, retry later). Everything else passes through unchanged.
//
// Transact runs a write in one transaction, and the Thens its caller
// handed down explicitly after the write's own statements, before the
// commit (an Idempotency-Key's stored answer, a change request marked
// applied): nothing joins a transaction through a context.
//
// KeyColumnType and TableOptions give migrations the column and table
// definitions that keep identifiers case-sensitive in every dialect, the
// way Redis keys are.
package sqlstore
