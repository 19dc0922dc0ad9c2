package api_test

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/promptd/promptd/api"
)

// tokenKind is one column of the authorization matrix.
type tokenKind struct {
	name   string
	secret func(m *matrix) string
	out    bool // the request names the out-of-scope team (agent, env and board)
	envOut bool // only the env is out of scope
}

// matrix holds the fixtures every cell runs against: two teams' agents,
// each with a pointer in prod, a release and a session, and a board.
type matrix struct {
	a                          *app
	scopedAdmin, scopedRuntime string
	expired, revoked           string
	releaseIn, releaseOut      string
	sessionIn, sessionOut      string
	recordIn, recordOut        string
	changeIn, changeOut        string
}

func newMatrix(t *testing.T) *matrix {
	// Thousands of requests with revoked, expired and unknown tokens
	// from one address: the limit of failed authentications (its own
	// test, authlimit_test.go) would answer them 429.
	a := sqliteApp(t, withLeads, func(c *api.Config) { c.AuthFailuresPerMinute = -1 })
	m := &matrix{a: a}
	for _, team := range []string{"team-a", "team-b"} {
		agent := team + "-bot"
		a.createVersion(agent, 0, "v1")
		a.createVersion(agent, 1, "v2")
		a.publish(agent, "prod", 1, 0)
		a.publish(agent, "staging", 1, 0)
		rel := a.ok(a.do("POST", "/v1/agents/"+agent+"/envs/prod/releases", admin,
			`{"candidate_version": 2, "percent": 10, "stickiness": "user", "message": "m"}`), 201)
		sess := a.ok(a.do("POST", "/v1/sessions", runtime, `{"agent": "`+agent+`", "env": "prod"}`), 201)
		rec := a.ok(a.do("POST", "/v1/boards/"+team+"-board/records", runtime, `{"payload": {}}`), 201)
		if team == "team-a" {
			m.releaseIn, m.sessionIn, m.recordIn = rel["id"].(string), sess["session_id"].(string), rec["id"].(string)
		} else {
			m.releaseOut, m.sessionOut, m.recordOut = rel["id"].(string), sess["session_id"].(string), rec["id"].(string)
		}
	}
	// A protected env for change requests to look up (the matrix never
	// approves them: its approvals are by the requester, or out of scope).
	a.ok(a.do("PUT", "/v1/protections/prod", admin, `{"approvals": 1}`), 200)
	for _, team := range []string{"team-a", "team-b"} {
		cr := a.ok(a.do("PUT", "/v1/agents/"+team+"-bot/envs/prod", lead, `{"version": 2, "expected_revision": 2}`), 202)
		id := cr["change_request"].(map[string]any)["id"].(string)
		if team == "team-a" {
			m.changeIn = id
		} else {
			m.changeOut = id
		}
	}
	scopes := `"scopes": {"agents": ["team-a-*"], "envs": ["prod"], "boards": ["team-a-*"]}`
	m.scopedAdmin = a.createToken(`{"name": "team-a-admin", "role": "admin", ` + scopes + `}`)
	m.scopedRuntime = a.createToken(`{"name": "team-a-runtime", "role": "runtime", ` + scopes + `}`)
	m.revoked = a.createToken(`{"name": "gone", "role": "admin"}`)
	a.ok(a.do("GET", "/v1/agents", m.revoked, ""), 200) // cached before the revocation
	if rec := a.do("DELETE", "/v1/tokens/gone", admin, ""); rec.Code != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", rec.Code, rec.Body)
	}
	m.expired = a.createToken(`{"name": "brief", "role": "admin", "expires_at": "` +
		time.Now().Add(1200*time.Millisecond).UTC().Format(time.RFC3339Nano) + `"}`)
	a.ok(a.do("GET", "/v1/agents", m.expired, ""), 200)
	time.Sleep(1300 * time.Millisecond)
	return m
}

// path fills a route template for a cell.
func (m *matrix) path(route string, k tokenKind) string {
	team, env := "team-a", "prod"
	if k.out {
		team, env = "team-b", "staging"
	}
	if k.envOut {
		env = "staging"
	}
	rel, sess, rec := m.releaseIn, m.sessionIn, m.recordIn
	if k.out {
		rel, sess, rec = m.releaseOut, m.sessionOut, m.recordOut
	}
	var parts []string
	segs := strings.Split(route, "/")
	for i, seg := range segs {
		switch {
		case seg == ":agent":
			seg = team + "-bot"
		case seg == ":env":
			seg = env
		case seg == ":board":
			seg = team + "-board"
		case seg == ":id" && segs[i-1] == "releases":
			seg = rel
		case seg == ":id" && segs[i-1] == "sessions":
			seg = sess
		case seg == ":id" && segs[i-1] == "records":
			seg = rec
		case seg == ":id" && segs[i-1] == "change-requests":
			seg = m.changeIn
			if k.out {
				seg = m.changeOut
			}
		case strings.HasPrefix(seg, ":"):
			seg = map[string]string{":version": "1", ":a": "1", ":b": "2", ":key": "k", ":lease_id": "lease-1",
				":name": "nobody", ":delivery": "1", ":id": "wh_00000000000000000000"}[seg]
		}
		parts = append(parts, seg)
	}
	p := strings.Join(parts, "/")
	if strings.HasSuffix(p, "/events") || strings.HasSuffix(p, "/changes") {
		p += "?wait_ms=0"
	}
	return p
}

// adminOnly is the HTTP contract's (api/openapi.yaml) role rule: writes to versions, env pointers,
// releases, revocations, fragments, import and boards' definitions, and everything
// on audit, webhooks and tokens, are admin-only.
func adminOnly(method, route string) bool {
	switch {
	case strings.HasPrefix(route, "/v1/audit"), strings.HasPrefix(route, "/v1/webhooks"), strings.HasPrefix(route, "/v1/tokens"),
		strings.HasPrefix(route, "/v1/protections"), strings.HasPrefix(route, "/v1/change-requests"):
		return true
	case strings.HasPrefix(route, "/v1/agents/:agent/drafts"), route == "/v1/agents/:agent/preview": // authoring: every route
		return true
	case method == http.MethodGet, strings.HasSuffix(route, "/assemble"):
		return false
	case strings.HasPrefix(route, "/v1/agents/"), strings.HasPrefix(route, "/v1/releases/"), strings.HasPrefix(route, "/v1/fragments/"), route == "/v1/import":
		return true
	case route == "/v1/boards/:board" && method == http.MethodPut:
		return true
	}
	return false
}

// TestAuthz_everyRouteByEveryTokenKind_answersAsDecided is the
// authorization matrix, generated from the route table: every /v1 route
// has a scope decision (its registration in api/routes.go names it), and every token kind gets the
// answer the route's role and decision say: no, expired or revoked token
// 401; a runtime token on an admin route 403; a scoped token 403 outside
// its scope (and on routes that need an unscoped token); anything else is
// the handler's own answer, never 401, 403 or 500.
func TestAuthz_everyRouteByEveryTokenKind_answersAsDecided(t *testing.T) {
	m := newMatrix(t)
	decisions := api.RouteScopes(m.a.srv)
	kinds := []tokenKind{
		{name: "none", secret: func(*matrix) string { return "" }},
		{name: "expired", secret: func(m *matrix) string { return m.expired }},
		{name: "revoked", secret: func(m *matrix) string { return m.revoked }},
		{name: "admin", secret: func(*matrix) string { return admin }},
		{name: "runtime", secret: func(*matrix) string { return runtime }},
		{name: "scoped-admin-in", secret: func(m *matrix) string { return m.scopedAdmin }},
		{name: "scoped-admin-out", secret: func(m *matrix) string { return m.scopedAdmin }, out: true},
		{name: "scoped-admin-env-out", secret: func(m *matrix) string { return m.scopedAdmin }, envOut: true},
		{name: "scoped-runtime-in", secret: func(m *matrix) string { return m.scopedRuntime }},
		{name: "scoped-runtime-out", secret: func(m *matrix) string { return m.scopedRuntime }, out: true},
	}
	var routes []string
	for _, r := range m.a.srv.Echo().Routes() {
		if strings.HasPrefix(r.Path, "/v1/") {
			routes = append(routes, r.Method+" "+r.Path)
		}
	}
	sort.Strings(routes)
	cells, byKind := 0, map[string]int{}
	for _, key := range routes {
		method, route, _ := strings.Cut(key, " ")
		decision := decisions[key]
		for _, k := range kinds {
			scoped := strings.HasPrefix(k.name, "scoped")
			if k.envOut && !strings.Contains(route, ":env") {
				continue // the env-only column applies to routes that name an env
			}
			want := "handler" // the handler's own answer
			switch {
			case k.name == "none" || k.name == "expired" || k.name == "revoked":
				want = "401"
			case (k.name == "runtime" || k.name == "scoped-runtime-in" || k.name == "scoped-runtime-out") && adminOnly(method, route):
				want = "403"
			case scoped && (decision == "unscoped" || decision == ""):
				want = "403"
			case scoped && (k.out || k.envOut) && (decision == "path" || decision == "lookup"):
				want = "403"
			}
			body := ""
			if method != http.MethodGet && method != http.MethodDelete {
				body = "{}"
			}
			rec := m.a.do(method, m.path(route, k), k.secret(m), body)
			ok := false
			switch want {
			case "401":
				ok = rec.Code == http.StatusUnauthorized
			case "403":
				ok = rec.Code == http.StatusForbidden
			default:
				ok = rec.Code != http.StatusUnauthorized && rec.Code != http.StatusForbidden && rec.Code < 500
				// a board's deletion by a token that did not create it: the
				// domain's own refusal, which names the creator
				if key == "DELETE /v1/boards/:board" && rec.Code == http.StatusForbidden {
					ok = strings.Contains(rec.Body.String(), `"created_by"`)
				}
			}
			if !ok {
				t.Errorf("%s as %s (decision %q): %d %s, want %s", key, k.name, decision, rec.Code, strings.TrimSpace(rec.Body.String()), want)
			}
			cells++
			byKind[k.name+"="+want]++
		}
	}
	t.Logf("authorization matrix: %d routes x %d token kinds = %d cells (%v)", len(routes), len(kinds), cells, fmt.Sprint(byKind))
}
