package api

// routes registers every route of the API. A URL in a bug report leads
// from here to its handler.
func (s *Server) routes() {
	// Operations: no token (except /metrics with PROMPTD_METRICS_TOKEN).
	s.e.GET("/healthz", s.handleHealthz)
	s.e.GET("/readyz", s.handleReadyz)
	s.e.GET("/metrics", s.handleMetrics())
}
