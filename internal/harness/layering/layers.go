package layering

// Module is the module path every package name below is relative to.
const Module = "github.com/promptd/promptd"

// Layers are the module's shipped packages, from the ground up: a package
// may import packages of lower layers only (and the pairs of Sideways).
// The order is the one of the design: the error vocabulary, pure leaves,
// then the stores and logs everything writes through, the prompt model,
// the prompt store, the domain packages, the embeddable runtime, the
// transport, commands.
var Layers = [][]string{
	// 0: the vocabulary: the error codes, statuses and shared error types,
	// and the wire shapes; they import only the standard library.
	{"problem", "wire"},
	// 1: leaves; they import nothing of promptd but the vocabulary.
	{"ident", "telemetry", "console", "sqlstore", "internal/jsonin", "internal/buildinfo", "internal/slowloris", "jsonmerge", "release/guard"},
	// 2: canonical JSON, leases and the audit log.
	{"internal/canonjson", "locks", "audit"},
	// 3: the pure prompt model, the change feed and the intent graph.
	{"prompt", "events", "intent"},
	// 4: the prompt store and the bundle's wire form.
	{"promptstore", "bundle"},
	// 5: the domain packages.
	{"access", "board", "leases", "release", "session", "webhook", "api/idempotency"},
	// 6: exposures and outcomes (they check releases).
	{"exposure"},
	// 7: gated writes and change requests (every caller's).
	{"changes"},
	// 8: the application layer: the embeddable runtime, and the Go client
	// (it reads bundles; it must never reach a store).
	{"", "api/client"},
	// 8b: the MCP server over the runtime (the transport mounts it).
	{"mcpserver"},
	// 9: the transport.
	{"api"},
	// 10: commands and examples.
	{"cmd/promptd", "cmd/promptctl", "cmd/promptbench", "examples/runtime"},
}

// Sideways are the allowed imports within one layer, importer -> imported.
var Sideways = map[string][]string{
	"problem": {"wire"}, // an answer's times are wire.Time
}

// Harness are the test-harness packages: test code only, never imported
// by a shipped package (they may import shipped ones). They live under
// internal/harness/ (a helper beside its package is named *test), so what
// ships is everything else.
var Harness = []string{"internal/harness/testenv", "internal/harness/e2e", "internal/harness/hostile", "internal/harness/browsertest",
	"internal/harness/conformance", "internal/harness/conformance/gen", "internal/harness/readmewalk", "internal/harness/layering", "internal/harness/allocbudget", "webhook/webhooktest"}

// HTTPFramework is the HTTP framework: only the transport and the
// commands may import it (domain packages know nothing of HTTP routing).
const HTTPFramework = "github.com/labstack/echo/v4"

// MayImportHTTPFramework are the packages that may import HTTPFramework.
var MayImportHTTPFramework = []string{"api", "cmd/promptd", "cmd/promptbench"}

// ClientMayImport are the only promptd packages the Go client may import,
// so a runtime that imports it pulls in no SQL driver or server code.
var ClientMayImport = []string{"bundle", "prompt", "ident", "internal/canonjson", "internal/jsonin", "wire"}
