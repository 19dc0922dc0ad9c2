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
package release
