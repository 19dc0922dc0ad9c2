package api

// RouteScopes are the scope decisions of the /v1 routes, by "METHOD
// path", and the routes registered without one.
func RouteScopes(s *Server) (map[string]string, []string) {
	out := map[string]string{}
	for key, n := range routeNeeds {
		out[key] = n.kind
	}
	return out, s.undecided
}
