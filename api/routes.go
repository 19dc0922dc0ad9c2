package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/release"
)

// routes registers every route of the API. A URL in a bug report leads
// from here to its handler.
func (s *Server) routes() {
	// Operations: no token (except /metrics with PROMPTD_METRICS_TOKEN).
	s.e.GET("/healthz", s.handleHealthz)
	s.e.HEAD("/healthz", s.handleHealthz)
	s.e.GET("/readyz", s.handleReadyz)
	s.e.HEAD("/readyz", s.handleReadyz)
	s.e.GET("/metrics", s.handleMetrics())
	s.e.GET("/openapi.yaml", s.handleOpenAPI)

	// The web console (console.go, console_auth.go): its pages and its
	// login into a session cookie, which the /v1 routes then accept.
	s.e.GET("/ui", s.handleConsoleRoot, consoleHeaders)
	s.e.GET("/ui/*", s.handleConsoleFile, consoleHeaders)
	s.e.POST("/ui/login", s.handleConsoleLogin, consoleHeaders)
	s.e.GET("/ui/session", s.handleConsoleSession, consoleHeaders)
	s.e.POST("/ui/logout", s.handleConsoleLogout, consoleHeaders)

	// runtime: any valid token; admin: admin tokens only. Idempotent POSTs
	// take an Idempotency-Key.
	runtime, admin := []echo.MiddlewareFunc{s.require(RoleRuntime)}, []echo.MiddlewareFunc{s.require(RoleAdmin)}
	idempotentAdmin := append(admin[:len(admin):len(admin)], s.idempotent)
	idempotentRuntime := append(runtime[:len(runtime):len(runtime)], s.idempotent)
	// heavy routes build or stream large answers: bounded per token and per instance (heavy.go).
	heavyRuntime, heavyAdmin := append(runtime[:len(runtime):len(runtime)], s.heavy), append(admin[:len(admin):len(admin)], s.heavy)
	v1 := composed{g: s.e.Group("/v1"), s: s, prefix: "/v1"}

	// Prompt versions.
	v1.GET("/agents", inHandler, s.handleListAgents, runtime...)
	v1.POST("/agents/:agent/versions", agentOnly, s.handleCreateVersion, idempotentAdmin...)
	v1.GET("/agents/:agent/versions", agentOnly, s.handleListVersions, heavyRuntime...)
	v1.GET("/agents/:agent/versions/:version", agentOnly, s.handleGetVersion, runtime...)
	v1.GET("/agents/:agent/versions/:a/diff/:b", agentOnly, s.handleDiff, heavyRuntime...)

	// Drafts and preview: authoring, admin only, each draft its
	// principal's (drafts.go, preview.go).
	v1.POST("/agents/:agent/drafts", agentOnly, s.handleCreateDraft, admin...)
	v1.GET("/agents/:agent/drafts", agentOnly, s.handleListDrafts, admin...)
	v1.GET("/agents/:agent/drafts/:id", agentOnly, s.handleGetDraft, admin...)
	v1.PUT("/agents/:agent/drafts/:id", agentOnly, s.handlePutDraft, admin...)
	v1.DELETE("/agents/:agent/drafts/:id", agentOnly, s.handleDeleteDraft, admin...)
	v1.POST("/agents/:agent/drafts/:id/validate", agentOnly, s.handleValidateDraft, admin...)
	v1.GET("/agents/:agent/drafts/:id/diff", agentOnly, s.handleDraftDiff, admin...)
	v1.POST("/agents/:agent/drafts/:id/publish", agentOnly, s.handlePublishDraft, admin...)
	v1.POST("/agents/:agent/preview", agentOnly, s.handlePreview, admin...)

	// Fragments: shared, versioned pieces of prompts; no agent scope
	// covers them (fragments.go).
	v1.GET("/fragments", unscopedOnly, s.handleListFragments, runtime...)
	v1.POST("/fragments/:name/versions", unscopedOnly, s.handleCreateFragmentVersion, idempotentAdmin...)
	v1.GET("/fragments/:name/versions", unscopedOnly, s.handleListFragmentVersions, heavyRuntime...)
	v1.GET("/fragments/:name/versions/:version", unscopedOnly, s.handleGetFragmentVersion, runtime...)
	v1.GET("/fragments/:name/versions/:version/used-by", unscopedOnly, s.handleFragmentUsedBy, runtime...)
	v1.GET("/fragments/:name/envs/:env", unscopedOnly, s.handleGetFragmentEnv, runtime...)
	v1.PUT("/fragments/:name/envs/:env", unscopedOnly, s.handlePutFragmentEnv, admin...)

	// Env pointers and revocations.
	v1.GET("/agents/:agent/envs/:env", agentEnv, s.handleGetEnv, runtime...)
	v1.GET("/agents/:agent/envs/:env/history", agentEnv, s.handleEnvHistory, heavyRuntime...)
	v1.PUT("/agents/:agent/envs/:env", agentEnv, s.handlePutEnv, admin...)
	v1.POST("/agents/:agent/envs/:env/revocations", agentEnv, s.handleRevoke, admin...)
	v1.DELETE("/agents/:agent/envs/:env/revocations/:version", agentEnv, s.handleLiftRevocation, admin...)

	// Runtime path.
	v1.GET("/agents/:agent/envs/:env/prompt", agentEnv, s.handlePrompt, runtime...)
	v1.POST("/agents/:agent/envs/:env/assemble", agentEnv, s.handleAssemble, runtime...)

	// Releases.
	v1.POST("/agents/:agent/envs/:env/releases", agentEnv, s.handleCreateRelease, idempotentAdmin...)
	v1.GET("/agents/:agent/envs/:env/releases", agentEnv, s.handleListReleases, runtime...)
	v1.GET("/releases/:id", byRelease, s.handleGetRelease, runtime...)
	v1.PATCH("/releases/:id", byRelease, s.handlePatchRelease, admin...)
	v1.POST("/releases/:id/pause", byRelease, s.handleTransition(release.ActPause), admin...)
	v1.POST("/releases/:id/resume", byRelease, s.handleTransition(release.ActResume), admin...)
	v1.POST("/releases/:id/promote", byRelease, s.handleTransition(release.ActPromote), admin...)
	v1.POST("/releases/:id/rollback", byRelease, s.handleTransition(release.ActRollback), admin...)
	v1.POST("/agents/:agent/envs/:env/rollback", agentEnv, s.handleEnvRollback, admin...)

	// Bundles, exposures and outcomes (bundle.go, exposures.go).
	v1.GET("/bundle", inHandler, s.handleBundle, runtime...) // heavy only when it builds a body (bundle.go)
	v1.POST("/exposures", inHandler, s.handleRecordExposures, idempotentRuntime...)
	v1.GET("/agents/:agent/envs/:env/exposures", agentEnv, s.handleListExposures, runtime...)
	v1.POST("/outcomes", inHandler, s.handleRecordOutcomes, idempotentRuntime...)

	// Sessions and their leases (lease routes take no Idempotency-Key).
	v1.POST("/sessions", inHandler, s.handleCreateSession, idempotentRuntime...)
	v1.GET("/sessions", inHandler, s.handleListSessions, runtime...) // lists.go
	v1.GET("/sessions/:id", bySession, s.handleGetSession, runtime...)
	v1.POST("/sessions/:id/turns", bySession, s.handleAppendTurns, idempotentRuntime...)
	v1.PUT("/sessions/:id/state/:key", bySession, s.handlePutState, idempotentRuntime...)
	v1.GET("/sessions/:id/state", bySession, s.handleGetState, runtime...)
	v1.POST("/sessions/:id/close", bySession, s.handleCloseSession, runtime...)
	v1.POST("/sessions/:id/lease", bySession, s.handleAcquireSessionLease, runtime...)
	v1.POST("/sessions/:id/lease/renew", bySession, s.handleRenewSessionLease, runtime...)
	v1.DELETE("/sessions/:id/lease", bySession, s.handleReleaseSessionLease, runtime...)

	// Generic leases on business resources.
	v1.POST("/leases", unscopedOnly, s.handleAcquireLeases, runtime...)
	v1.POST("/leases/:lease_id/renew", unscopedOnly, s.handleRenewLeases, runtime...)
	v1.DELETE("/leases/:lease_id", unscopedOnly, s.handleReleaseLeases, runtime...)

	// Boards: the shared blackboard (boards.go).
	v1.GET("/boards", inHandler, s.handleListBoards, runtime...) // lists.go
	v1.PUT("/boards/:board", unscopedOnly, s.handlePutBoard, admin...)
	v1.GET("/boards/:board", boardOnly, s.handleGetBoard, runtime...)
	v1.DELETE("/boards/:board", boardOnly, s.handleDeleteBoard, runtime...)
	v1.POST("/boards/:board/records", boardOnly, s.handleCreateRecord, idempotentRuntime...)
	v1.GET("/boards/:board/records", boardOnly, s.handleListRecords, heavyRuntime...)
	v1.GET("/boards/:board/records/:id", boardOnly, s.handleGetRecord, runtime...)
	v1.PATCH("/boards/:board/records/:id", boardOnly, s.handlePatchRecord, runtime...)
	v1.POST("/boards/:board/claim", boardOnly, s.handleClaimNext, idempotentRuntime...)
	v1.POST("/boards/:board/records/:id/claim", boardOnly, s.handleClaimOne, idempotentRuntime...)
	v1.POST("/boards/:board/records/:id/heartbeat", boardOnly, s.handleHeartbeat, runtime...)
	v1.POST("/boards/:board/records/:id/release", boardOnly, s.handleReleaseRecord, runtime...)
	v1.POST("/boards/:board/batches", boardOnly, s.handleApplyBatch, idempotentRuntime...) // batches.go
	v1.GET("/boards/:board/batches/:id", boardOnly, s.handleGetBatch, runtime...)

	// Intents: the scopes agents register before a batch of work (intents.go).
	v1.POST("/intents", inHandler, s.handleRegisterIntent, idempotentRuntime...)
	v1.GET("/intents", inHandler, s.handleListIntents, runtime...)
	v1.GET("/intents/:id", inHandler, s.handleGetIntent, runtime...)
	v1.POST("/intents/:id/renew", inHandler, s.handleRenewIntent, runtime...)
	v1.POST("/intents/:id/release", inHandler, s.handleReleaseIntent, runtime...)

	// Batch import and audit.
	v1.POST("/import", inHandler, s.handleImport, idempotentAdmin...)
	v1.GET("/audit", unscopedOnly, s.handleAudit, heavyAdmin...)

	// The change feed: every committed change, in commit order.
	v1.GET("/events", inHandler, s.handleEvents, runtime...)
	v1.GET("/boards/:board/changes", boardOnly, s.handleBoardChanges, runtime...)

	// MCP: prompts and tools over the Model Context Protocol, per env (mcp.go).
	s.routeMCP(v1, runtime)

	// Webhooks: the change feed delivered to HTTP receivers.
	v1.POST("/webhooks", unscopedOnly, s.handleCreateWebhook, idempotentAdmin...)
	v1.GET("/webhooks", unscopedOnly, s.handleListWebhooks, admin...)
	v1.GET("/webhooks/:id", unscopedOnly, s.handleGetWebhook, admin...)
	v1.PATCH("/webhooks/:id", unscopedOnly, s.handlePatchWebhook, admin...)
	v1.DELETE("/webhooks/:id", unscopedOnly, s.handleDeleteWebhook, admin...)
	v1.POST("/webhooks/:id/rotate-secret", unscopedOnly, s.handleRotateSecret, idempotentAdmin...)
	v1.GET("/webhooks/:id/deliveries", unscopedOnly, s.handleListDeliveries, admin...)
	v1.POST("/webhooks/:id/deliveries/:delivery/retry", unscopedOnly, s.handleRetryDelivery, admin...)

	// Managed tokens (tokens.go).
	v1.POST("/tokens", unscopedOnly, s.handleCreateToken, idempotentAdmin...)
	v1.GET("/tokens", unscopedOnly, s.handleListTokens, admin...)
	v1.DELETE("/tokens/:name", unscopedOnly, s.handleRevokeToken, admin...)

	// Protected envs and change requests (protections.go, change_requests.go).
	v1.PUT("/protections/:env", unscopedOnly, s.handlePutProtection, admin...)
	v1.DELETE("/protections/:env", unscopedOnly, s.handleDeleteProtection, admin...)
	v1.GET("/change-requests", inHandler, s.handleListChangeRequests, admin...)
	v1.GET("/change-requests/:id", byChangeRequest, s.handleGetChangeRequest, admin...)
	v1.POST("/change-requests/:id/approve", byChangeRequest, s.handleApproveChangeRequest, admin...)
	v1.POST("/change-requests/:id/reject", byChangeRequest, s.handleRejectChangeRequest, admin...)
	v1.POST("/change-requests/:id/cancel", byChangeRequest, s.handleCancelChangeRequest, admin...)
}

// composed registers routes with their middleware composed once, at
// registration: Echo's own route middleware is applied anew on every
// request (a closure per middleware per request). Same order: the first
// middleware runs first.
// The route's scope decision (its need, scopes.go) runs last, after the
// token's role check.
type composed struct {
	g      *echo.Group
	s      *Server
	prefix string
}

func (r composed) add(method, path string, need scopeNeed, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) {
	if need.kind == "" {
		panic("api: route " + method + " " + r.prefix + path + " has no scope decision")
	}
	r.s.needs[method+" "+r.prefix+path] = need
	h = r.s.scoped(need, h)
	for i := len(mw) - 1; i >= 0; i-- {
		h = mw[i](h)
	}
	r.g.Add(method, path, h)
}

func (r composed) GET(path string, need scopeNeed, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) {
	r.add(http.MethodGet, path, need, h, mw...)
}

func (r composed) POST(path string, need scopeNeed, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) {
	r.add(http.MethodPost, path, need, h, mw...)
}

func (r composed) PUT(path string, need scopeNeed, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) {
	r.add(http.MethodPut, path, need, h, mw...)
}

func (r composed) PATCH(path string, need scopeNeed, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) {
	r.add(http.MethodPatch, path, need, h, mw...)
}

func (r composed) DELETE(path string, need scopeNeed, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) {
	r.add(http.MethodDelete, path, need, h, mw...)
}
