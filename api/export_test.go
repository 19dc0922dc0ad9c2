package api

// RouteScopes are the scope decisions of the /v1 routes, by "METHOD
// path", as registered.
func RouteScopes(s *Server) map[string]string {
	out := map[string]string{}
	for key, n := range s.needs {
		out[key] = n.kind
	}
	return out
}
