// Package access is promptd's managed bearer tokens and their scopes.
//
// A managed token is created by another token (its creator), stored in SQL
// only as the SHA-256 of its secret, and carries a role, optional scopes
// (agents, envs and boards by name or prefix pattern), an optional expiry
// and its principal: the creator's principal, so approvals can count people
// rather than token names. The bootstrap set (PROMPTD_TOKENS) stays outside
// SQL; each bootstrap token is its own principal.
//
// Service.Authenticate is the hot path: a map lookup keyed by the hash of
// the presented secret, trusted for at most CacheTTL (1 s), then re-read
// from SQL. Revocations are also pushed on the events Bus, so every
// instance drops the token at once when the bus works and within CacheTTL
// when it does not. A managed token that SQL cannot confirm is
// ErrUnavailable, never accepted on stale evidence.
package access
