// Package prompt is promptd's prompt model, shared by the server and by
// programs that evaluate bundles locally: the config (system, tools,
// skills, memory, chat messages, model, variables) and its validation,
// one-pass template rendering, variable binding, byte-exact assembly in
// the plain and OpenAI shapes, and the release arm decision (bucketing,
// hashed overrides, revocations, session pins).
//
// It is pure: the standard library and promptd's canonical JSON, no I/O,
// so the answer a program computes locally is the server's, byte for
// byte. Package promptstore stores and hashes configs and uses this one;
// package bundle evaluates a GET /v1/bundle answer with it.
//
// Errors are *InvalidError values (a stable code and the field or
// variable at fault); test with errors.As.
package prompt
