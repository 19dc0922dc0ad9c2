package api

import (
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v4"
)

// openAPISpec is the machine-readable contract of every route in
// routes.go (a test keeps the two in step).
//
//go:embed openapi.yaml
var openAPISpec []byte

// OpenAPI returns the OpenAPI 3.1 document served at /openapi.yaml.
func OpenAPI() []byte { return openAPISpec }

// handleOpenAPI: GET /openapi.yaml, no token.
func (s *Server) handleOpenAPI(c echo.Context) error {
	c.Response().Header().Set(echo.HeaderCacheControl, "no-cache")
	return c.Blob(http.StatusOK, "application/yaml", openAPISpec)
}
