package api_test

import (
	"strings"
	"testing"
)

// TestBadInput_getsItsCode_andChangesNoRow sends every kind of bad input
// the API documents and checks the status, the code, the field (or
// variable) it names, and that no row of the prompt store or the audit log
// changed.
func TestBadInput_getsItsCode_andChangesNoRow(t *testing.T) {
	long := strings.Repeat("a", 200)
	big := `{"base_version": 2, "config": {"system": "` + strings.Repeat("x", 1<<20) + `"}}`
	cases := []struct {
		name, method, path, token, body string
		headers                         []string
		status                          int
		code, field, variable           string
	}{
		// Malformed bodies.
		{"malformed JSON", "POST", versionsPath, admin, `{"base_version": 2,`, nil, 400, "invalid_json", "", ""},
		{"not JSON", "POST", versionsPath, admin, `hello`, nil, 400, "invalid_json", "", ""},
		{"empty body", "POST", versionsPath, admin, ``, nil, 400, "invalid_json", "", ""},
		{"array body", "POST", versionsPath, admin, `[1]`, nil, 400, "invalid_json", "", ""},
		{"trailing data", "POST", versionsPath, admin, `{"base_version": 2, "config": {"system": "x"}} {}`, nil, 400, "invalid_json", "", ""},
		{"duplicate member", "POST", versionsPath, admin, `{"base_version": 2, "base_version": 1, "config": {"system": "x"}}`, nil, 400, "invalid_json", "", ""},
		{"unknown member", "POST", versionsPath, admin, `{"base_version": 2, "config": {"system": "x"}, "author": "me"}`, nil, 400, "invalid_field", "author", ""},

		// Wrong types and out-of-range numbers.
		{"base_version as string", "POST", versionsPath, admin, `{"base_version": "2", "config": {"system": "x"}}`, nil, 400, "invalid_field", "base_version", ""},
		{"base_version fraction", "POST", versionsPath, admin, `{"base_version": 2.5, "config": {"system": "x"}}`, nil, 400, "invalid_field", "base_version", ""},
		{"base_version negative", "POST", versionsPath, admin, `{"base_version": -1, "config": {"system": "x"}}`, nil, 400, "invalid_field", "base_version", ""},
		{"base_version 2^32", "POST", versionsPath, admin, `{"base_version": 4294967296, "config": {"system": "x"}}`, nil, 400, "invalid_field", "base_version", ""},
		{"base_version huge", "POST", versionsPath, admin, `{"base_version": 99999999999999999999, "config": {"system": "x"}}`, nil, 400, "invalid_field", "base_version", ""},
		{"base_version 1e3", "POST", versionsPath, admin, `{"base_version": 1e3, "config": {"system": "x"}}`, nil, 400, "invalid_field", "base_version", ""},
		{"base_version missing", "POST", versionsPath, admin, `{"config": {"system": "x"}}`, nil, 400, "invalid_field", "base_version", ""},
		{"config missing", "POST", versionsPath, admin, `{"base_version": 2}`, nil, 400, "invalid_field", "config", ""},
		{"config a string", "POST", versionsPath, admin, `{"base_version": 2, "config": "x"}`, nil, 400, "invalid_field", "config", ""},
		{"message a number", "POST", versionsPath, admin, `{"base_version": 2, "config": {"system": "x"}, "message": 1}`, nil, 400, "invalid_field", "message", ""},
		{"message too long", "POST", versionsPath, admin, `{"base_version": 2, "config": {"system": "x"}, "message": "` + strings.Repeat("m", 4097) + `"}`, nil, 400, "invalid_field", "message", ""},
		{"pointer version negative", "PUT", "/v1/agents/support/envs/prod", admin, `{"version": -1, "expected_revision": 1}`, nil, 400, "invalid_field", "version", ""},
		{"pointer version 2^31", "PUT", "/v1/agents/support/envs/prod", admin, `{"version": 2147483648, "expected_revision": 1}`, nil, 400, "invalid_field", "version", ""},
		{"pointer version string", "PUT", "/v1/agents/support/envs/prod", admin, `{"version": "1", "expected_revision": 1}`, nil, 400, "invalid_field", "version", ""},
		{"expected_revision negative", "PUT", "/v1/agents/support/envs/prod", admin, `{"version": 2, "expected_revision": -1}`, nil, 400, "invalid_field", "expected_revision", ""},
		{"expected_revision fraction", "PUT", "/v1/agents/support/envs/prod", admin, `{"version": 2, "expected_revision": 1.5}`, nil, 400, "invalid_field", "expected_revision", ""},
		{"pointer reason too long", "PUT", "/v1/agents/support/envs/prod", admin, `{"version": 2, "expected_revision": 1, "reason": "` + strings.Repeat("r", 70000) + `"}`, nil, 400, "invalid_field", "reason", ""},
		{"revocation reason too long", "POST", "/v1/agents/support/envs/prod/revocations", admin, `{"version": 2, "reason": "` + strings.Repeat("r", 1025) + `"}`, nil, 400, "invalid_field", "reason", ""},

		// Config content: 422.
		{"unknown placeholder", "POST", versionsPath, admin, `{"base_version": 2, "config": {"system": "Hi {{who}}"}}`, nil, 422, "undeclared_variable", "config.system", "who"},
		{"invalid config", "POST", versionsPath, admin, `{"base_version": 2, "config": {"system": "x", "skills": [{"instructions": "y"}]}}`, nil, 422, "invalid_config", "config.skills[0].name", ""},
		{"empty system", "POST", versionsPath, admin, `{"base_version": 2, "config": {"system": ""}}`, nil, 422, "invalid_config", "config.system", ""},
		{"assemble variable not a string", "POST", "/v1/agents/support/envs/prod/assemble", runtime, `{"variables": {"who": ["x"]}}`, nil, 422, "invalid_variable", "variables.who", "who"},

		// Version path parameters.
		{"version -1", "GET", versionsPath + "/-1", runtime, "", nil, 400, "invalid_field", "version", ""},
		{"version 0", "GET", versionsPath + "/0", runtime, "", nil, 400, "invalid_field", "version", ""},
		{"version 2^31", "GET", versionsPath + "/2147483648", runtime, "", nil, 400, "invalid_field", "version", ""},
		{"version huge", "GET", versionsPath + "/99999999999999999999999", runtime, "", nil, 400, "invalid_field", "version", ""},
		{"version not a number", "GET", versionsPath + "/two", runtime, "", nil, 400, "invalid_field", "version", ""},
		{"version with sign", "GET", versionsPath + "/+1", runtime, "", nil, 400, "invalid_field", "version", ""},
		{"diff side", "GET", versionsPath + "/1/diff/x", runtime, "", nil, 400, "invalid_field", "b", ""},
		{"lift version", "DELETE", "/v1/agents/support/envs/prod/revocations/-3", admin, "", nil, 400, "invalid_field", "version", ""},

		// Identifiers in the path, URL-encoded.
		{"agent with {", "GET", "/v1/agents/%7Bsupport/versions", runtime, "", nil, 400, "invalid_id", "agent", ""},
		{"agent with }", "POST", "/v1/agents/support%7D/versions", admin, `{"base_version": 0, "config": {"system": "x"}}`, nil, 400, "invalid_id", "agent", ""},
		{"agent with :", "GET", "/v1/agents/sup%3Aport/versions/1", runtime, "", nil, 400, "invalid_id", "agent", ""},
		{"agent with a space", "PUT", "/v1/agents/sup%20port/envs/prod", admin, `{"version": 1, "expected_revision": 0}`, nil, 400, "invalid_id", "agent", ""},
		{"agent with /", "GET", "/v1/agents/sup%2Fport/envs/prod", runtime, "", nil, 400, "invalid_id", "agent", ""},
		{"agent of 200 chars", "POST", "/v1/agents/" + long + "/versions", admin, `{"base_version": 0, "config": {"system": "x"}}`, nil, 400, "invalid_id", "agent", ""},
		{"env with {}", "GET", "/v1/agents/support/envs/%7Bprod%7D/prompt", runtime, "", nil, 400, "invalid_id", "env", ""},
		{"env of 200 chars", "POST", "/v1/agents/support/envs/" + long + "/revocations", admin, `{"version": 1}`, nil, 400, "invalid_id", "env", ""},
		{"env starting with .", "PUT", "/v1/agents/support/envs/.prod", admin, `{"version": 1, "expected_revision": 0}`, nil, 400, "invalid_id", "env", ""},
		{"session_id with :", "GET", "/v1/agents/support/envs/prod/prompt?session_id=a%3Ab", runtime, "", nil, 400, "invalid_id", "session_id", ""},
		{"user_id with a control char", "POST", "/v1/agents/support/envs/prod/assemble", runtime, `{"user_id": "a\u0007b"}`, nil, 400, "invalid_id", "user_id", ""},
		{"audit agent filter", "GET", "/v1/audit?agent=%7Bx%7D", admin, "", nil, 400, "invalid_id", "agent", ""},

		// Query parameters.
		{"limit 0", "GET", "/v1/agents?limit=0", runtime, "", nil, 400, "invalid_field", "limit", ""},
		{"limit negative", "GET", "/v1/agents?limit=-5", runtime, "", nil, 400, "invalid_field", "limit", ""},
		{"limit over 500", "GET", versionsPath + "?limit=501", runtime, "", nil, 400, "invalid_field", "limit", ""},
		{"limit not a number", "GET", "/v1/audit?limit=ten", admin, "", nil, 400, "invalid_field", "limit", ""},
		{"bad agents cursor", "GET", "/v1/agents?cursor=%FF%FE", runtime, "", nil, 400, "invalid_field", "cursor", ""},
		{"bad versions cursor", "GET", versionsPath + "?cursor=abc", runtime, "", nil, 400, "invalid_field", "cursor", ""},
		{"audit since negative", "GET", "/v1/audit?since=-1", admin, "", nil, 400, "invalid_field", "since", ""},
		{"audit action", "GET", "/v1/audit?action=DROP%20TABLE", admin, "", nil, 400, "invalid_field", "action", ""},

		// Body size, auth, idempotency.
		{"oversized body", "POST", versionsPath, admin, big, nil, 413, "body_too_large", "", ""},
		{"missing token", "POST", versionsPath, "", `{"base_version": 2, "config": {"system": "x"}}`, nil, 401, "unauthorized", "", ""},
		{"unknown token", "PUT", "/v1/agents/support/envs/prod", "not-a-token-0123456789", `{"version": 2, "expected_revision": 1}`, nil, 401, "unauthorized", "", ""},
		{"missing token on a read", "GET", "/v1/agents", "", "", nil, 401, "unauthorized", "", ""},
		{"runtime creates a version", "POST", versionsPath, runtime, `{"base_version": 2, "config": {"system": "x"}}`, nil, 403, "forbidden", "", ""},
		{"runtime moves a pointer", "PUT", "/v1/agents/support/envs/prod", runtime, `{"version": 2, "expected_revision": 1}`, nil, 403, "forbidden", "", ""},
		{"runtime revokes", "POST", "/v1/agents/support/envs/prod/revocations", runtime, `{"version": 2}`, nil, 403, "forbidden", "", ""},
		{"runtime lifts", "DELETE", "/v1/agents/support/envs/prod/revocations/2", runtime, "", nil, 403, "forbidden", "", ""},
		{"runtime imports", "POST", "/v1/import", runtime, `{"mode": "partial", "items": []}`, nil, 403, "forbidden", "", ""},
		{"runtime reads audit", "GET", "/v1/audit", runtime, "", nil, 403, "forbidden", "", ""},
		{"reused Idempotency-Key", "POST", versionsPath, admin, `{"base_version": 2, "config": {"system": "other"}}`, []string{"Idempotency-Key", "used"}, 422, "idempotency_key_reused", "Idempotency-Key", ""},
		{"all_or_nothing import with a conflict", "POST", "/v1/import", admin, `{"mode": "all_or_nothing", "items": [{"agent": "new", "base_version": 0, "config": {"system": "x"}}, {"agent": "support", "base_version": 0, "config": {"system": "x"}}]}`, nil, 409, "import_rejected", "", ""},
	}
	forEachDialect(t, func(t *testing.T, a *app) {
		a.ok(a.do("POST", versionsPath, admin, `{"base_version": 0, "config": {"system": "Hi {{who}}", "variables": {"who": {"default": "you"}}}}`), 201)
		a.ok(a.do("POST", versionsPath, admin, `{"base_version": 1, "config": {"system": "two"}}`, "Idempotency-Key", "used"), 201)
		a.publish("support", "prod", 1, 0)
		before := a.counts()
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				p := problem(t, a.do(tc.method, tc.path, tc.token, tc.body, tc.headers...), tc.status, tc.code)
				if tc.field != "" && p["field"] != tc.field {
					t.Errorf("field = %v, want %s", p["field"], tc.field)
				}
				if tc.variable != "" && p["variable"] != tc.variable {
					t.Errorf("variable = %v, want %s", p["variable"], tc.variable)
				}
				if tc.code == "body_too_large" && p["limit"] != float64(1<<20) {
					t.Errorf("limit = %v", p["limit"])
				}
				if after := a.counts(); after != before {
					t.Fatalf("rows changed: %+v -> %+v", before, after)
				}
			})
		}
	})
}
