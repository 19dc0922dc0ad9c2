// Package session keeps the shared context of agent conversations: turns
// (append-only, seq from 1, contiguous), blackboard state entries with
// per-key revisions, session leases with fencing tokens, double-texting
// modes (reject, wait, preempt), pinning to a prompt version, and the idle
// sweeper.
//
// Writes follow one rule. The session row holds the highest fence ever
// granted; acquiring or preempting the session lease raises it in SQL
// before the lease is returned. A write that carries a fence is accepted
// only with the row's current fence (else ErrStaleFence); a write without
// one is accepted only while no lease is held, and carries the fence it
// read into its SQL condition, so a lease taken in between makes it fail.
// A row whose fence is still 0 has never had a lease granted, so the
// unfenced writes of a session that never used its lease skip the read
// and the lease check and carry fence = 0 instead (guard.go). Both also
// check the session's revision. The lock is the fast path; the
// conditions are the guarantee, so writes go on under them when Redis is
// down.
package session
