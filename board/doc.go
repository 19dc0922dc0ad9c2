// Package board is promptd's shared blackboard: named boards of records
// (tasks, findings, drafts) that a group of agents create, claim, work on
// and complete.
//
// Each board has one state machine (Definition), kept in its row and
// checked on every write. A claim is a compare-and-set in SQL that takes
// the first eligible record in board order (priority desc, created_at,
// id) and raises the record's fence; on MySQL/MariaDB it is one
// SELECT ... FOR UPDATE SKIP LOCKED and one conditional UPDATE in one
// transaction, so any number of claimers on any number of instances never
// take one record twice; SQLite has one writer. The fence and the claim's
// expiry (the SQL server's clock, never an instance's) are in every
// holder's write condition, and a reclaim or a release raises the fence
// again, so of a last-moment completion and the reclaim sweeper exactly
// one wins.
//
// Every record change writes its audit event (board.record_created,
// board.record_claimed, board.record_updated, board.record_released,
// board.record_reclaimed) in its own transaction. A change that can make
// a record claimable (a create, a release, a reclaim, a write that ends a
// claim, a redefinition) publishes a bus event of kind EventKind after
// commit, which wakes claimers waiting (wait) on this or another
// instance; a claim publishes none, so waiters are not woken by each
// other's claims.
package board
