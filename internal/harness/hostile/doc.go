// Package hostile attacks a real promptd process over HTTP, as a hostile
// client would, on embedded SQLite and on MariaDB.
//
// Each case is an attack that a review found to succeed against an earlier
// promptd (an approval bypassed, a scope typo widening a token, a feed
// position reused, a resource exhausted by one token) and that must now be
// refused. The package holds tests only; `./scripts/test.sh` runs it with
// the rest of the suite, starting MariaDB itself, so no case skips in CI.
package hostile
