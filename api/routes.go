package api

import (
	"errors"

	"github.com/labstack/echo/v4"
)

// routes registers every route of the API. A URL in a bug report leads
// from here to its handler.
func (s *Server) routes() {
	// Operations: no token (except /metrics with PROMPTD_METRICS_TOKEN).
	s.e.GET("/healthz", s.handleHealthz)
	s.e.GET("/readyz", s.handleReadyz)
	s.e.GET("/metrics", s.handleMetrics())
	s.e.GET("/openapi.yaml", s.handleOpenAPI)

	// runtime: any valid token; admin: admin tokens only. Idempotent POSTs
	// take an Idempotency-Key.
	runtime, admin := []echo.MiddlewareFunc{s.require(RoleRuntime), s.domain}, []echo.MiddlewareFunc{s.require(RoleAdmin), s.domain}
	idempotentAdmin := append(admin[:len(admin):len(admin)], s.idempotent)
	v1 := s.e.Group("/v1")

	// Prompt versions.
	v1.GET("/agents", s.handleListAgents, runtime...)
	v1.POST("/agents/:agent/versions", s.handleCreateVersion, idempotentAdmin...)
	v1.GET("/agents/:agent/versions", s.handleListVersions, runtime...)
	v1.GET("/agents/:agent/versions/:version", s.handleGetVersion, runtime...)
	v1.GET("/agents/:agent/versions/:a/diff/:b", s.handleDiff, runtime...)

	// Env pointers and revocations.
	v1.GET("/agents/:agent/envs/:env", s.handleGetEnv, runtime...)
	v1.PUT("/agents/:agent/envs/:env", s.handlePutEnv, admin...)
	v1.POST("/agents/:agent/envs/:env/revocations", s.handleRevoke, admin...)
	v1.DELETE("/agents/:agent/envs/:env/revocations/:version", s.handleLiftRevocation, admin...)

	// Runtime path.
	v1.GET("/agents/:agent/envs/:env/prompt", s.handlePrompt, runtime...)
	v1.POST("/agents/:agent/envs/:env/assemble", s.handleAssemble, runtime...)

	// Batch import and audit.
	v1.POST("/import", s.handleImport, idempotentAdmin...)
	v1.GET("/audit", s.handleAudit, admin...)
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
