// Package mcpserver serves promptd over the Model Context Protocol (MCP),
// with the official Go SDK (github.com/modelcontextprotocol/go-sdk): an
// agent lists and gets its prompts (prompts/list, prompts/get), hears when
// they change (notifications/prompts/list_changed), and claims board
// records and appends session turns through tools.
//
// It builds on the application layer (promptd.Runtime), never on HTTP
// calls: promptd's API mounts Handler at /v1/mcp/{env} behind its bearer
// authentication, and `promptctl mcp` bridges a local client's stdio to
// that endpoint, so there is one MCP implementation.
//
// # Naming
//
// One MCP server serves one env for one token (Service.Server): its
// prompts are the agents that have a pointer in that env and that the
// token's scopes allow, each named by its agent name. An out-of-scope
// agent is neither listed nor gettable (prompts/get answers the SDK's
// unknown-prompt error).
//
// # Arguments
//
// A prompt's arguments are the declared variables of the version the env
// resolves to for a caller without user or session id (its pointer; during
// a release, the release's baseline: the arms bucket by user or session),
// sorted by name, with their descriptions and
// required flags. Variables are strings, as MCP arguments are. A required
// variable without a value is a JSON-RPC invalid-params error (-32602)
// whose message starts with promptd's code, missing_variable, and names
// the variable.
//
// # Roles
//
// prompts/get answers what POST /v1/agents/{agent}/envs/{env}/assemble
// answers, mapped to MCP's two roles: user and assistant stay; the system
// message (MCP has no system role) is the first message, role user, its
// text starting with the marker line SystemMarker; a tool message is a
// user message starting with ToolMarker. The result's _meta holds the
// original roles in order ("promptd/roles"), the version and its content
// hash, so a client that knows promptd restores them exactly.
//
// # Change notifications
//
// A server follows the change feed (events.Feed): a pointer switch, a new
// version, a release step, promotion or rollback, a revocation or an
// import that touches its env re-reads the affected prompts and sends
// notifications/prompts/list_changed to its sessions. The bound is the
// feed's: the event is read by the feed within its poll period (100 ms on
// one instance without Redis; pushed through Redis or etcd otherwise),
// then the prompts are re-read and the notification sent after the SDK's
// 10 ms debounce: well within 1 s (the tests measure it).
//
// # Tools
//
// Tools have exact input schemas (every property typed, required listed,
// additionalProperties false: an unknown member is refused before the
// handler runs). They call the same domain services as the HTTP API, with
// the same scope checks: a board outside the token's scopes, or a session
// of an agent or env outside them, is a tool error with code forbidden. A
// tool error is a result with isError true whose structured content is
// promptd's problem: {"code", "status", "detail", ...} (stale_fence,
// lease_held, revision_conflict, ...).
package mcpserver
