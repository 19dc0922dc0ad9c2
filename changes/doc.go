// Package changes is the gating of writes to protected envs, for every
// caller: the HTTP API and a program that embeds promptd call the same
// functions, so a pointer switch in a protected env files a change request
// whoever asks for it.
//
// Each gated write (SwitchPointer, RollbackEnv, LiftRevocation,
// CreateRelease, PatchRelease, TransitionRelease, SetProtection) runs the
// domain write with a gate that decides, inside the write's own
// transaction and from the rows it locks, whether the env's protection
// covers it (access.CheckGate). Covered: the write rolls back with nothing
// written and a change request is filed instead (access.Service.Gate); the
// write's result is then nil and the request is returned. A gate that
// cannot be read refuses the write.
//
// A change request stores a domain command (the Command types of this
// package, format CommandVersion), not the HTTP body it came with; the
// body is kept only to be shown. Approve applies the command in the
// approving transaction, revision-checked on the target, and records the
// problem (package problem) of a write that fails. Requests filed before
// commands were stored are converted by this package's migration
// (Migrations).
package changes
