// Package bundle is the wire form of GET /v1/bundle and a local
// evaluator over it: Resolve and Assemble answer from a bundle exactly as
// promptd answers GET .../prompt and POST .../assemble (the active
// release's bucketing, hashed overrides, revocations, session pins,
// rendering and byte-exact assembly in both formats), with no network
// call.
//
// What only the server can answer is an *AskServer error (test with
// errors.Is(err, ErrAskServer)): a session whose pin is unknown to the
// caller, revoked in the env (the re-pin is a server write) or names a
// version the bundle lacks. Answers the server would give as a problem
// (agent_not_found, missing_variable, invalid_config, ...) are *Error
// values with the same code, status and field.
//
// The package is pure: the standard library and package prompt. The
// conformance vectors in testdata/conformance (the repository's root)
// pin its answers to the server's; every SDK runs the same vectors.
package bundle
