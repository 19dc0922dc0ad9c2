// Package release rolls a new prompt version out to a share of users:
// grayscale releases with sticky bucketing, scheduled ramp steps, pause,
// promote and rollback, and the resolver that puts a release's arm in front
// of the env pointer.
//
// One transition table (Transitions) is used by every entry point. A
// release is active while running or paused; the env pointer row names the
// active release, so the database allows one per agent and env even
// without Redis. Every change is one SQL transaction with revision checks
// on the release row and the pointer row, taken under the env's release
// lock as the fast path, and announced on the events channel.
//
// Overrides (overrides.go) force listed callers onto an arm ahead of
// bucketing; only the hashes of their keys are stored. A change of the
// lists is a revision-checked transition (ActOverrides, or with a percent),
// audited as release.percent_changed with the lists' sizes, never ids, so
// every reader that follows percent changes follows overrides too.
//
// Bundle (bundle.go) reads, in one snapshot, everything an SDK needs to
// resolve locally, with the change-feed position that snapshot reflects.
package release
