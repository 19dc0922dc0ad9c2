// Package intent is promptd's intent graph: before an agent starts a
// batch of work it registers what it is about to touch (agents and envs,
// whole boards, record ids or id prefixes), so that others see the overlap
// and plan around it before they collide.
//
// An intent has a holder, a mode, a scope, a description and a TTL renewed
// like a lease. Registering answers every live intent whose scope
// overlaps. An exclusive intent is refused when any live intent overlaps
// it (and an advisory one when a live exclusive one does): the decision is
// made inside the registering SQL transaction, from the rows of the scope's
// spaces it locks (one row for all agent scopes, one per board), never by
// a check before an insert, so of two overlapping exclusive registrations
// on any number of instances exactly one wins. Its fence grows in every
// space it takes.
//
// A write made under an intent names it (Ref); the domain package that
// writes calls Check inside its own transaction, which locks the intent's
// row, and refuses the write once the intent was released or expired by
// the SQL server's clock (*Ended, stale_fence) or when the write is
// outside the intent's scope (*OutsideScope, outside_intent).
//
// Registering, releasing and expiring write their audit events
// (intent.registered, intent.released, intent.expired) in their own
// transactions, so they reach the change feed.
package intent
