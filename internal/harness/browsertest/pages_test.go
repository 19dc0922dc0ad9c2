package browsertest

import (
	"fmt"
	"strings"
	"testing"
)

// seeded names what seedAll created, for the pages that show one thing.
type seeded struct {
	release, webhook, intent string
}

// seedAll gives every console page something to show: two agents with
// versions and envs, a running release with traffic, a session with turns,
// state and a lease, a board with a claimed record and an intent on its
// records, a webhook with deliveries, a managed token, a pending change
// request and their audit.
func (s *server) seedAll() seeded {
	s.t.Helper()
	s.publish("support", 0, "You are a helpful assistant for ACME.")
	s.publish("support", 1, "You are a helpful assistant for ACME.\nAnswer in two sentences.")
	s.publish("billing", 0, "You answer billing questions.")
	s.point("support", "prod", 1)
	s.point("support", "staging", 2)
	s.point("billing", "prod", 1)

	wh := s.must(201, "POST", "/v1/webhooks", map[string]any{
		"url": "http://127.0.0.1:9/hook", "actions": []string{"pointer.switched", "release.*"}, "description": "ops alerts"})

	rel := s.must(201, "POST", "/v1/agents/support/envs/prod/releases", map[string]any{
		"candidate_version": 2, "percent": 25, "stickiness": "user", "message": "v2 to a quarter"})
	for i := 0; i < 20; i++ {
		s.mustAs(runtimeToken, 200, "GET", fmt.Sprintf("/v1/agents/support/envs/prod/prompt?user_id=u%d", i), nil)
	}

	s.mustAs(runtimeToken, 201, "POST", "/v1/sessions", map[string]any{"session_id": "chat-1", "agent": "support", "env": "prod", "user_id": "u1"})
	s.mustAs(runtimeToken, 201, "POST", "/v1/sessions/chat-1/turns", map[string]any{"expected_revision": 0, "turns": []map[string]any{
		{"role": "user", "content": "Where is my order?"}, {"role": "assistant", "content": "It ships tomorrow."}}})
	s.mustAs(runtimeToken, 200, "PUT", "/v1/sessions/chat-1/state/plan", map[string]any{"value": map[string]any{"step": 1}, "expected_revision": 0})
	s.mustAs(runtimeToken, 200, "POST", "/v1/sessions/chat-1/lease", map[string]any{"holder": "worker-1", "ttl_ms": 60000})

	s.mustAs(runtimeToken, 201, "POST", "/v1/boards/tasks/records", map[string]any{"id": "t1", "payload": map[string]any{"title": "triage"}, "priority": 2})
	s.mustAs(runtimeToken, 201, "POST", "/v1/boards/tasks/records", map[string]any{"id": "t2", "payload": map[string]any{"title": "reply"}})
	s.mustAs(runtimeToken, 200, "POST", "/v1/boards/tasks/claim", map[string]any{"holder": "agent-a"})
	in := s.mustAs(runtimeToken, 201, "POST", "/v1/intents", map[string]any{"holder": "agent-a", "description": "triage the backlog", "ttl_ms": 3600000,
		"scope": map[string]any{"records": []map[string]any{{"board": "tasks", "ids": []string{"t1", "t2"}, "prefixes": []string{"t-"}}}}})

	s.must(201, "POST", "/v1/tokens", map[string]any{"name": "ci", "role": "runtime", "scopes": map[string]any{"agents": []string{"support"}}})

	s.must(200, "PUT", "/v1/protections/staging", map[string]any{"approvals": 1})
	s.must(202, "PUT", "/v1/agents/support/envs/staging", map[string]any{"version": 1, "expected_revision": 1})
	return seeded{release: rel["id"].(string), webhook: wh["id"].(string), intent: in["id"].(string)}
}

// consolePage is one URL of the console and what shows it has loaded.
type consolePage struct {
	name, path, ready string
}

func consolePages(d seeded) []consolePage {
	loaded := func(region string) string { return sel(region, "data-loaded", "true") }
	return []consolePage{
		{"agents", "/ui/", loaded("agents") + " " + sel("agent-row")},
		{"agent", "/ui/agents/support", loaded("versions") + " " + sel("version-row")},
		{"diff", "/ui/agents/support/diff?a=1&b=2", sel("diff-line-add")},
		{"env", "/ui/agents/support/envs/prod", sel("env-pointer")},
		{"releases-recent", "/ui/releases", loaded("recent-releases") + " " + sel("release-link")},
		{"releases", "/ui/releases?agent=support&env=prod", loaded("releases") + " " + sel("release-row")},
		{"release", "/ui/releases/" + d.release, sel("arms") + " " + sel("arm-row")},
		{"sessions", "/ui/sessions", loaded("sessions")},
		{"session", "/ui/sessions/chat-1", loaded("turns") + " " + sel("turn-row")},
		{"boards", "/ui/boards", loaded("boards")},
		{"board", "/ui/boards/tasks", loaded("records") + " " + sel("record-row")},
		{"intents", "/ui/intents", loaded("intents") + " " + sel("intent-row")},
		{"intent", "/ui/intents/" + d.intent, sel("intent-summary", "data-state", "active")},
		{"webhooks", "/ui/webhooks", loaded("webhooks") + " " + sel("webhook-row")},
		{"webhook", "/ui/webhooks/" + d.webhook, loaded("deliveries")},
		{"tokens", "/ui/tokens", loaded("tokens") + " " + sel("token-row")},
		{"change-requests", "/ui/change-requests", loaded("change-requests") + " " + sel("cr-row")},
		{"audit", "/ui/audit", loaded("audit") + " " + sel("audit-row")},
	}
}

func TestEveryPage_axeFindsNoSeriousOrCriticalViolation_andNoCSPViolation(t *testing.T) {
	srv := startServer(t)
	data := srv.seedAll()
	tb := newTab(t, srv)

	type result struct {
		name          string
		severe, all   int
		csp, problems []string
	}
	var results []result
	check := func(name string) {
		t.Helper()
		tb.settle()
		severe, all := tb.axeRun()
		r := result{name: name, severe: len(severe), all: all, csp: tb.cspViolations(), problems: tb.consoleProblems()}
		for _, v := range severe {
			t.Errorf("%s: axe: %s", name, v)
		}
		for _, v := range r.csp {
			t.Errorf("%s: CSP violation: %s", name, v)
		}
		for _, p := range r.problems {
			t.Errorf("%s: console: %s", name, p)
		}
		results = append(results, r)
		tb.screenshot(name)
	}

	tb.open("/ui/login")
	tb.waitSel(sel("login-form"))
	check("login")
	tb.login(adminToken)
	for _, p := range consolePages(data) {
		tb.open(p.path)
		tb.wait(p.name+" page loaded", "document.querySelector("+js(p.ready)+")")
		if n := tb.count(sel("page-error")); n != 0 {
			t.Errorf("%s: page error %q", p.name, tb.text(sel("page-error")))
		}
		if n := tb.count("h1"); n != 1 {
			t.Errorf("%s: %d h1 elements, want 1", p.name, n)
		}
		check(p.name)
	}

	var table strings.Builder
	fmt.Fprintf(&table, "axe-core (WCAG 2.0/2.1 A+AA) per console page:\n%-16s %-40s %8s %8s %4s\n", "page", "path", "serious+", "all", "csp")
	paths := map[string]string{"login": "/ui/login"}
	for _, p := range consolePages(data) {
		paths[p.name] = p.path
	}
	for _, r := range results {
		fmt.Fprintf(&table, "%-16s %-40s %8d %8d %4d\n", r.name, paths[r.name], r.severe, r.all, len(r.csp))
	}
	t.Log(table.String())
	if len(results) != len(consolePages(data))+1 {
		t.Errorf("checked %d pages, want %d", len(results), len(consolePages(data))+1)
	}
}

// The control for the check above: a form control without a label, put
// into a console page, is reported as a serious or critical violation.
func TestAxe_anUnlabeledInput_isReported(t *testing.T) {
	srv := startServer(t)
	tb := newTab(t, srv)
	tb.open("/ui/login")
	tb.waitSel(sel("login-form"))
	before, _ := tb.axeRun()
	eval[bool](tb, `(() => { const i = document.createElement('input'); i.type = 'text';
		document.querySelector('main').append(i); return true; })()`)
	after, _ := tb.axeRun()
	t.Logf("serious or critical violations: %d before the injected input, %d after", len(before), len(after))
	found := false
	for _, v := range after {
		found = found || v.ID == "label"
	}
	if len(after) <= len(before) || !found {
		t.Errorf("an unlabeled input was not reported: before %v, after %v", before, after)
	}
}
