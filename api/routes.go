package api

import (
	"errors"
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
	runtime, admin := []echo.MiddlewareFunc{s.require(RoleRuntime), s.domain}, []echo.MiddlewareFunc{s.require(RoleAdmin), s.domain}
	idempotentAdmin := append(admin[:len(admin):len(admin)], s.idempotent)
	idempotentRuntime := append(runtime[:len(runtime):len(runtime)], s.idempotent)
	// heavy routes build or stream large answers: bounded per token and per instance (heavy.go).
	heavyRuntime, heavyAdmin := append(runtime[:len(runtime):len(runtime)], s.heavy), append(admin[:len(admin):len(admin)], s.heavy)
	v1 := composed{g: s.e.Group("/v1"), s: s, prefix: "/v1"}

	// Prompt versions.
	v1.GET("/agents", s.handleListAgents, runtime...)
	v1.POST("/agents/:agent/versions", s.handleCreateVersion, idempotentAdmin...)
	v1.GET("/agents/:agent/versions", s.handleListVersions, heavyRuntime...)
	v1.GET("/agents/:agent/versions/:version", s.handleGetVersion, runtime...)
	v1.GET("/agents/:agent/versions/:a/diff/:b", s.handleDiff, heavyRuntime...)

	// Env pointers and revocations.
	v1.GET("/agents/:agent/envs/:env", s.handleGetEnv, runtime...)
	v1.GET("/agents/:agent/envs/:env/history", s.handleEnvHistory, heavyRuntime...)
	v1.PUT("/agents/:agent/envs/:env", s.handlePutEnv, admin...)
	v1.POST("/agents/:agent/envs/:env/revocations", s.handleRevoke, admin...)
	v1.DELETE("/agents/:agent/envs/:env/revocations/:version", s.handleLiftRevocation, admin...)

	// Runtime path.
	v1.GET("/agents/:agent/envs/:env/prompt", s.handlePrompt, runtime...)
	v1.POST("/agents/:agent/envs/:env/assemble", s.handleAssemble, runtime...)

	// Releases.
	v1.POST("/agents/:agent/envs/:env/releases", s.handleCreateRelease, idempotentAdmin...)
	v1.GET("/agents/:agent/envs/:env/releases", s.handleListReleases, runtime...)
	v1.GET("/releases/:id", s.handleGetRelease, runtime...)
	v1.PATCH("/releases/:id", s.handlePatchRelease, admin...)
	v1.POST("/releases/:id/pause", s.handleTransition(release.ActPause), admin...)
	v1.POST("/releases/:id/resume", s.handleTransition(release.ActResume), admin...)
	v1.POST("/releases/:id/promote", s.handleTransition(release.ActPromote), admin...)
	v1.POST("/releases/:id/rollback", s.handleTransition(release.ActRollback), admin...)
	v1.POST("/agents/:agent/envs/:env/rollback", s.handleEnvRollback, admin...)

	// Bundles, exposures and outcomes (bundle.go, exposures.go).
	v1.GET("/bundle", s.handleBundle, runtime...) // heavy only when it builds a body (bundle.go)
	v1.POST("/exposures", s.handleRecordExposures, idempotentRuntime...)
	v1.GET("/agents/:agent/envs/:env/exposures", s.handleListExposures, runtime...)
	v1.POST("/outcomes", s.handleRecordOutcomes, idempotentRuntime...)

	// Sessions and their leases (lease routes take no Idempotency-Key).
	v1.POST("/sessions", s.handleCreateSession, idempotentRuntime...)
	v1.GET("/sessions", s.handleListSessions, runtime...) // lists.go
	v1.GET("/sessions/:id", s.handleGetSession, runtime...)
	v1.POST("/sessions/:id/turns", s.handleAppendTurns, idempotentRuntime...)
	v1.PUT("/sessions/:id/state/:key", s.handlePutState, idempotentRuntime...)
	v1.GET("/sessions/:id/state", s.handleGetState, runtime...)
	v1.POST("/sessions/:id/close", s.handleCloseSession, runtime...)
	v1.POST("/sessions/:id/lease", s.handleAcquireSessionLease, runtime...)
	v1.POST("/sessions/:id/lease/renew", s.handleRenewSessionLease, runtime...)
	v1.DELETE("/sessions/:id/lease", s.handleReleaseSessionLease, runtime...)

	// Generic leases on business resources.
	v1.POST("/leases", s.handleAcquireLeases, runtime...)
	v1.POST("/leases/:lease_id/renew", s.handleRenewLeases, runtime...)
	v1.DELETE("/leases/:lease_id", s.handleReleaseLeases, runtime...)

	// Boards: the shared blackboard (boards.go).
	v1.GET("/boards", s.handleListBoards, runtime...) // lists.go
	v1.PUT("/boards/:board", s.handlePutBoard, admin...)
	v1.GET("/boards/:board", s.handleGetBoard, runtime...)
	v1.DELETE("/boards/:board", s.handleDeleteBoard, runtime...)
	v1.POST("/boards/:board/records", s.handleCreateRecord, idempotentRuntime...)
	v1.GET("/boards/:board/records", s.handleListRecords, heavyRuntime...)
	v1.GET("/boards/:board/records/:id", s.handleGetRecord, runtime...)
	v1.PATCH("/boards/:board/records/:id", s.handlePatchRecord, runtime...)
	v1.POST("/boards/:board/claim", s.handleClaimNext, idempotentRuntime...)
	v1.POST("/boards/:board/records/:id/claim", s.handleClaimOne, idempotentRuntime...)
	v1.POST("/boards/:board/records/:id/heartbeat", s.handleHeartbeat, runtime...)
	v1.POST("/boards/:board/records/:id/release", s.handleReleaseRecord, runtime...)

	// Batch import and audit.
	v1.POST("/import", s.handleImport, idempotentAdmin...)
	v1.GET("/audit", s.handleAudit, heavyAdmin...)

	// The change feed: every committed change, in commit order.
	v1.GET("/events", s.handleEvents, runtime...)
	v1.GET("/boards/:board/changes", s.handleBoardChanges, runtime...)

	// Webhooks: the change feed delivered to HTTP receivers.
	v1.POST("/webhooks", s.handleCreateWebhook, idempotentAdmin...)
	v1.GET("/webhooks", s.handleListWebhooks, admin...)
	v1.GET("/webhooks/:id", s.handleGetWebhook, admin...)
	v1.PATCH("/webhooks/:id", s.handlePatchWebhook, admin...)
	v1.DELETE("/webhooks/:id", s.handleDeleteWebhook, admin...)
	v1.POST("/webhooks/:id/rotate-secret", s.handleRotateSecret, idempotentAdmin...)
	v1.GET("/webhooks/:id/deliveries", s.handleListDeliveries, admin...)
	v1.POST("/webhooks/:id/deliveries/:delivery/retry", s.handleRetryDelivery, admin...)

	// Managed tokens (tokens.go).
	v1.POST("/tokens", s.handleCreateToken, idempotentAdmin...)
	v1.GET("/tokens", s.handleListTokens, admin...)
	v1.DELETE("/tokens/:name", s.handleRevokeToken, admin...)

	// Protected envs and change requests (protections.go, change_requests.go).
	v1.PUT("/protections/:env", s.handlePutProtection, admin...)
	v1.DELETE("/protections/:env", s.handleDeleteProtection, admin...)
	v1.GET("/change-requests", s.handleListChangeRequests, admin...)
	v1.GET("/change-requests/:id", s.handleGetChangeRequest, admin...)
	v1.POST("/change-requests/:id/approve", s.handleApproveChangeRequest, admin...)
	v1.POST("/change-requests/:id/reject", s.handleRejectChangeRequest, admin...)
	v1.POST("/change-requests/:id/cancel", s.handleCancelChangeRequest, admin...)
}

// routeNeeds is what each /v1 route needs of a scoped token (scopes.go).
// A new route states its decision here; without one it admits unscoped
// tokens only and the authorization matrix test fails.
var routeNeeds = map[string]scopeNeed{
	"GET /v1/agents":                                          inHandler,
	"POST /v1/agents/:agent/versions":                         agentOnly,
	"GET /v1/agents/:agent/versions":                          agentOnly,
	"GET /v1/agents/:agent/versions/:version":                 agentOnly,
	"GET /v1/agents/:agent/versions/:a/diff/:b":               agentOnly,
	"GET /v1/agents/:agent/envs/:env":                         agentEnv,
	"GET /v1/agents/:agent/envs/:env/history":                 agentEnv,
	"PUT /v1/agents/:agent/envs/:env":                         agentEnv,
	"POST /v1/agents/:agent/envs/:env/revocations":            agentEnv,
	"DELETE /v1/agents/:agent/envs/:env/revocations/:version": agentEnv,
	"GET /v1/agents/:agent/envs/:env/prompt":                  agentEnv,
	"POST /v1/agents/:agent/envs/:env/assemble":               agentEnv,
	"POST /v1/agents/:agent/envs/:env/releases":               agentEnv,
	"GET /v1/agents/:agent/envs/:env/releases":                agentEnv,
	"GET /v1/releases/:id":                                    byRelease,
	"PATCH /v1/releases/:id":                                  byRelease,
	"POST /v1/releases/:id/pause":                             byRelease,
	"POST /v1/releases/:id/resume":                            byRelease,
	"POST /v1/releases/:id/promote":                           byRelease,
	"POST /v1/releases/:id/rollback":                          byRelease,
	"POST /v1/agents/:agent/envs/:env/rollback":               agentEnv,
	"POST /v1/sessions":                                       inHandler,
	"GET /v1/sessions/:id":                                    bySession,
	"POST /v1/sessions/:id/turns":                             bySession,
	"PUT /v1/sessions/:id/state/:key":                         bySession,
	"GET /v1/sessions/:id/state":                              bySession,
	"POST /v1/sessions/:id/close":                             bySession,
	"POST /v1/sessions/:id/lease":                             bySession,
	"POST /v1/sessions/:id/lease/renew":                       bySession,
	"DELETE /v1/sessions/:id/lease":                           bySession,
	"POST /v1/leases":                                         unscopedOnly,
	"POST /v1/leases/:lease_id/renew":                         unscopedOnly,
	"DELETE /v1/leases/:lease_id":                             unscopedOnly,
	"PUT /v1/boards/:board":                                   unscopedOnly,
	"GET /v1/boards/:board":                                   boardOnly,
	"DELETE /v1/boards/:board":                                boardOnly,
	"POST /v1/boards/:board/records":                          boardOnly,
	"GET /v1/boards/:board/records":                           boardOnly,
	"GET /v1/boards/:board/records/:id":                       boardOnly,
	"PATCH /v1/boards/:board/records/:id":                     boardOnly,
	"POST /v1/boards/:board/claim":                            boardOnly,
	"POST /v1/boards/:board/records/:id/claim":                boardOnly,
	"POST /v1/boards/:board/records/:id/heartbeat":            boardOnly,
	"POST /v1/boards/:board/records/:id/release":              boardOnly,
	"POST /v1/import":                                         inHandler,
	"GET /v1/audit":                                           unscopedOnly,
	"GET /v1/events":                                          inHandler,
	"GET /v1/boards/:board/changes":                           boardOnly,
	"POST /v1/webhooks":                                       unscopedOnly,
	"GET /v1/webhooks":                                        unscopedOnly,
	"GET /v1/webhooks/:id":                                    unscopedOnly,
	"PATCH /v1/webhooks/:id":                                  unscopedOnly,
	"DELETE /v1/webhooks/:id":                                 unscopedOnly,
	"POST /v1/webhooks/:id/rotate-secret":                     unscopedOnly,
	"GET /v1/webhooks/:id/deliveries":                         unscopedOnly,
	"POST /v1/webhooks/:id/deliveries/:delivery/retry":        unscopedOnly,
	"POST /v1/tokens":                                         unscopedOnly,
	"GET /v1/tokens":                                          unscopedOnly,
	"DELETE /v1/tokens/:name":                                 unscopedOnly,
	"PUT /v1/protections/:env":                                unscopedOnly,
	"DELETE /v1/protections/:env":                             unscopedOnly,
	"GET /v1/change-requests":                                 inHandler,
	"GET /v1/change-requests/:id":                             byChangeRequest,
	"POST /v1/change-requests/:id/approve":                    byChangeRequest,
	"POST /v1/change-requests/:id/reject":                     byChangeRequest,
	"POST /v1/change-requests/:id/cancel":                     byChangeRequest,
	"GET /v1/bundle":                                          inHandler,
	"POST /v1/exposures":                                      inHandler,
	"GET /v1/agents/:agent/envs/:env/exposures":               agentEnv,
	"POST /v1/outcomes":                                       inHandler,
	"GET /v1/sessions":                                        inHandler,
	"GET /v1/boards":                                          inHandler,
}

// composed registers routes with their middleware composed once, at
// registration: Echo's own route middleware is applied anew on every
// request (a closure per middleware per request). Same order: the first
// middleware runs first.
// The route's scope decision (routeNeeds) runs last, after the token's
// role check.
type composed struct {
	g      *echo.Group
	s      *Server
	prefix string
}

func (r composed) add(method, path string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) {
	key := method + " " + r.prefix + path
	need, ok := routeNeeds[key]
	if !ok {
		need = unscopedOnly
		r.s.undecided = append(r.s.undecided, key)
	}
	h = r.s.scoped(need, h)
	for i := len(mw) - 1; i >= 0; i-- {
		h = mw[i](h)
	}
	r.g.Add(method, path, h)
}

func (r composed) GET(path string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) {
	r.add(http.MethodGet, path, h, mw...)
}

func (r composed) POST(path string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) {
	r.add(http.MethodPost, path, h, mw...)
}

func (r composed) PUT(path string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) {
	r.add(http.MethodPut, path, h, mw...)
}

func (r composed) PATCH(path string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) {
	r.add(http.MethodPatch, path, h, mw...)
}

func (r composed) DELETE(path string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) {
	r.add(http.MethodDelete, path, h, mw...)
}

// errNoStore: the server was built without a prompt store (an ops-only
// server in tests); its /v1 routes answer 500 internal.
var errNoStore = errors.New("api: no prompt store configured")

// domain guards the /v1 routes of a server without a prompt store.
func (s *Server) domain(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.cfg.Prompts == nil {
			return errNoStore
		}
		return next(c)
	}
}

// errNoService: the server was built without the release or session
// service its route needs; the route answers 500 internal.
var errNoService = errors.New("api: the route's service is not configured")
