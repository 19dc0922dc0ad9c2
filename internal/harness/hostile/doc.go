// Package hostile attacks a real promptd process over HTTP, as a hostile
// client would, on embedded SQLite and on MariaDB.
//
// Each case is an attack that a review found to succeed against an earlier
// promptd and that must now be refused: gated writes applied without
// approval under load, a protection lifted by a racing PUT, a guard-paused
// release resumed after its guard was removed, a scope typo minting a
// full-access token, a revoked creator's child token still live, one
// token's heavy reads starving the others, conditional bundles and large
// record lists built whole, an oversized import, and a flood of generic
// leases. (Reused feed positions are attacked by the fault suite's
// retention run, internal/harness/e2e TestFaultsRetention: it needs the
// feed pruned under load, which a client cannot cause.) The package holds
// tests only; `./scripts/test.sh` runs it with the rest of the suite,
// starting MariaDB itself, so no case skips in CI. On its own:
//
//	./scripts/test.sh -count=1 ./internal/harness/hostile/
package hostile
