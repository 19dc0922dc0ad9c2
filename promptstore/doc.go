// Package promptstore is promptd's prompt store: agents and their
// immutable, content-hashed versions; env pointers moved by revision-checked
// switches; revocations; template rendering and byte-exact assembly; batch
// import; and the read caches that make resolving a prompt as fast as a
// local map lookup.
//
// Writes are SQL transactions whose conditions make lost updates
// impossible: a version create names the base_version it was made from
// (*VersionConflict otherwise), a pointer switch names the revision it
// expects (*RevisionConflict). The lock service (Options.Locker) only
// serialises writers to cut contention; without it, or with Redis down,
// the same conditions still hold (degraded mode).
//
// Reads: a snapshot never changes, so it is cached forever (bounded LRU);
// pointers are cached tagged with their revision and only ever replaced by a
// newer one, kept fresh by change events (Redis pub/sub) and a reconciler.
//
// Who gets which version is a Resolver. The store's own resolver is the env
// pointer; package release puts a release's arm in front of it and package
// session a session's pin in front of that. Package promptd (the module's
// root) wires that chain for programs that embed promptd.
//
// Errors are typed values to test with errors.Is and errors.As:
// ErrAgentNotFound, ErrVersionNotFound, ErrNoPointer, ErrVersionRevoked,
// ErrUnavailable, *InvalidError (a code and the field at fault),
// *VersionConflict, *RevisionConflict, *LimitError.
package promptstore
