// Package locks provides lease locks with owner tokens and fencing tokens.
//
// A Locker grants a Lease on a key for a time-to-live. The lease carries a
// random owner token (release and renew compare it, so a holder never frees or
// extends somebody else's lock) and a fence: a number that grows strictly for
// each grant on a key, even across a Redis restart that lost every key, because
// it is max(previous+1, server time in microseconds). Storage that is written
// under a lease keeps the highest fence it has seen and rejects lower ones, so
// a holder that was paused past its TTL cannot overwrite the work of the next.
//
// Leases taken with Acquire are kept alive by one keepalive loop per Locker,
// which renews at TTL/3. Lease.Done is closed (and Lease.Context cancelled)
// when a renewal finds the lease gone or taken, and at the latest at
// "send time of the last successful grant or renewal + TTL - safety margin",
// so work done under the lease stops before anyone else can be granted it.
//
// Two backends implement the primitive operations: Redis (go-redis v9 and Lua
// scripts; a Client, Ring or ClusterClient fits) and memory (one process). The
// Locker on top adds keepalive, in-process reentrancy, waiting woken by
// release, ordered all-or-nothing multi-resource acquisition and metrics.
//
// Leases granted WithoutKeepalive are held by someone else (an HTTP client)
// who renews and releases them by token, perhaps through another instance
// (Locker.Renew, Locker.Release). The granting process never reports them
// lost: at its local deadline such a Lease just ends. Only leases this
// process keeps alive are logged, counted and hooked (OnLost) when lost.
// Acquires that wait are bounded per process (Options.MaxWaiters); one more
// gets ErrTooManyWaiters.
//
// Keys follow promptd's key schema, built by Keys: P:lock:<kind>:{<id>}, with
// the fence counter at <lock key>:fence in the same Redis Cluster slot. Every
// key expires: a lock with its lease, a fence counter RedisOptions.FenceTTL
// (10 minutes) after its last grant, plus however far its fence was ahead of
// the clock, after which the time component keeps fences
// growing. The memory backend likewise drops expired entries and the fence
// counters its monotonic clock has passed.
package locks
