package api_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd"
	"github.com/promptd/promptd/api"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/sqlstore"
	"github.com/promptd/promptd/webhook"
)

// webhookApp is an app whose runtime has webhooks (a secret key; the
// address guard as configured by default: https only, public hosts only).
func webhookApp(t *testing.T, withKey bool) *app {
	t.Helper()
	db := testenv.OpenDB(t, sqlstore.Config{SQLitePath: filepath.Join(t.TempDir(), "promptd.db")}, promptd.Migrations())
	return webhookAppOn(t, db, withKey)
}

func webhookAppOn(t *testing.T, db *gorm.DB, withKey bool) *app {
	t.Helper()
	var wo webhook.Options
	if withKey {
		key, _ := webhook.ParseKey(webhook.NewKey())
		wo.Cipher, _ = webhook.NewCipher(key)
	}
	rt := promptd.New(db, promptd.Options{Instance: "test-1", Webhooks: wo, EventFlush: 20 * time.Millisecond})
	t.Cleanup(func() { _ = rt.Close() })
	srv, _, logs := newServer(t, api.Config{
		Tokens: testTokens, Runtime: rt,
	})
	return &app{t: t, db: db, rt: rt, store: rt.Prompts, h: srv.Handler(), srv: srv, logs: logs}
}

// A public address literal: no DNS needed, and its actions match nothing
// the tests do, so nothing is sent.
const hookURL = "https://93.184.216.34/promptd"

func TestWebhooks_lifecycle_createGetPatchRotateDeliveriesDelete(t *testing.T) {
	a := webhookApp(t, true)
	created := a.ok(a.do("POST", "/v1/webhooks", admin, `{"url": "`+hookURL+`", "actions": ["release.*"], "description": "ops"}`), 201)
	id, _ := created["id"].(string)
	secret, _ := created["secret"].(string)
	if !strings.HasPrefix(id, "wh_") || !strings.HasPrefix(secret, "whsec_") || created["revision"] != float64(1) || created["enabled"] != true {
		t.Fatalf("created = %v", created)
	}
	got := a.ok(a.do("GET", "/v1/webhooks/"+id, admin, ""), 200)
	if _, ok := got["secret"]; ok {
		t.Fatalf("GET shows a secret: %v", got)
	}
	var stored string
	a.db.Raw(`SELECT secret FROM webhooks WHERE id = ?`, id).Scan(&stored)
	if stored == "" || strings.Contains(stored, strings.TrimPrefix(secret, "whsec_")) {
		t.Fatalf("the secret is not stored encrypted: %q", stored)
	}
	problem(t, a.do("PATCH", "/v1/webhooks/"+id, admin, `{"enabled": false}`), 428, "precondition_required")
	p := problem(t, a.do("PATCH", "/v1/webhooks/"+id, admin, `{"enabled": false, "expected_revision": 7}`), 409, "revision_conflict")
	if p["current_revision"] != float64(1) {
		t.Fatalf("conflict = %v", p)
	}
	patched := a.ok(a.do("PATCH", "/v1/webhooks/"+id, admin, `{"enabled": false, "agents": ["support"]}`, "If-Match", `"1"`), 200)
	if patched["enabled"] != false || patched["revision"] != float64(2) {
		t.Fatalf("patched = %v", patched)
	}
	rotated := a.ok(a.do("POST", "/v1/webhooks/"+id+"/rotate-secret", admin, `{"expected_revision": 2}`), 200)
	if s, _ := rotated["secret"].(string); s == secret || !strings.HasPrefix(s, "whsec_") || rotated["previous_secret_signs_until"] == nil {
		t.Fatalf("rotated = %v", rotated)
	}
	list := a.ok(a.do("GET", "/v1/webhooks", admin, ""), 200)
	if items, _ := list["items"].([]any); len(items) != 1 {
		t.Fatalf("list = %v", list)
	}
	ds := a.ok(a.do("GET", "/v1/webhooks/"+id+"/deliveries?limit=10", admin, ""), 200)
	if items, _ := ds["items"].([]any); len(items) != 0 {
		t.Fatalf("deliveries = %v", ds)
	}
	problem(t, a.do("POST", "/v1/webhooks/"+id+"/deliveries/42/retry", admin, ""), 404, "delivery_not_found")
	if rec := a.do("DELETE", "/v1/webhooks/"+id, admin, ""); rec.Code != 204 {
		t.Fatalf("delete = %d %s", rec.Code, rec.Body)
	}
	problem(t, a.do("GET", "/v1/webhooks/"+id, admin, ""), 404, "webhook_not_found")
	problem(t, a.do("GET", "/v1/webhooks/"+id+"/deliveries", admin, ""), 404, "webhook_not_found")
	problem(t, a.do("GET", "/v1/webhooks/bad%7Bid", admin, ""), 400, "invalid_id")
	problem(t, a.do("GET", "/v1/webhooks", runtime, ""), 403, "forbidden")
	problem(t, a.do("POST", "/v1/webhooks", runtime, `{"url": "`+hookURL+`", "actions": ["*"]}`), 403, "forbidden")
}

func TestWebhookCreate_whenURLIsRefused_is422InvalidURLWithReason(t *testing.T) {
	a := webhookApp(t, true)
	for url, reason := range map[string]string{
		"http://127.0.0.1/hook":                              "scheme",
		"https://127.0.0.1/hook":                             "refused_address",
		"https://169.254.169.254/latest":                     "refused_address",
		"https://[::1]/hook":                                 "refused_address",
		"https://[::ffff:10.0.0.1]/hook":                     "refused_address",
		"https://u:p@93.184.216.34/hook":                     "userinfo",
		"https://93.184.216.34/" + strings.Repeat("x", 2048): "too_long",
	} {
		p := problem(t, a.do("POST", "/v1/webhooks", admin, fmt.Sprintf(`{"url": %q, "actions": ["*"]}`, url)), 422, "invalid_url")
		if p["field"] != "url" || p["reason"] != reason {
			t.Errorf("%.50s: problem %v, want reason %s", url, p, reason)
		}
	}
	problem(t, a.do("POST", "/v1/webhooks", admin, `{"url": "`+hookURL+`", "actions": []}`), 400, "invalid_field")
	problem(t, a.do("POST", "/v1/webhooks", admin, `{"url": "`+hookURL+`"}`), 400, "invalid_field")
	problem(t, a.do("POST", "/v1/webhooks", admin, `{"url": "`+hookURL+`", "actions": ["A B"]}`), 400, "invalid_field")
	problem(t, a.do("POST", "/v1/webhooks", admin, `{"url": "`+hookURL+`", "actions": ["*"], "agents": ["{x}"]}`), 400, "invalid_id")
	var n int64
	a.db.Raw(`SELECT COUNT(*) FROM webhooks`).Scan(&n)
	if n != 0 {
		t.Fatalf("%d webhooks written by refused creates", n)
	}
}

func TestWebhookCreate_withIdempotencyKey_replaysWithTheSecretRedacted(t *testing.T) {
	a := webhookApp(t, true)
	body := `{"url": "` + hookURL + `", "actions": ["release.*"]}`
	first := a.do("POST", "/v1/webhooks", admin, body, "Idempotency-Key", "k1")
	m := a.ok(first, 201)
	if s, _ := m["secret"].(string); !strings.HasPrefix(s, "whsec_") || m["secret_redacted"] != false {
		t.Fatalf("first = %v", m)
	}
	again := a.do("POST", "/v1/webhooks", admin, body, "Idempotency-Key", "k1")
	r := a.ok(again, 201)
	if again.Header().Get("Idempotent-Replayed") != "true" || r["secret"] != nil || r["secret_redacted"] != true || r["id"] != m["id"] {
		t.Fatalf("replay = %v (%v)", r, again.Header())
	}
	var stored int64
	a.db.Raw(`SELECT COUNT(*) FROM idempotency_keys WHERE body LIKE ?`, "%whsec_%").Scan(&stored)
	if stored != 0 {
		t.Fatalf("%d stored outcomes hold a secret", stored)
	}
	rot := fmt.Sprintf(`{"expected_revision": 1}`)
	path := "/v1/webhooks/" + m["id"].(string) + "/rotate-secret"
	a.ok(a.do("POST", path, admin, rot, "Idempotency-Key", "k2"), 200)
	rr := a.ok(a.do("POST", path, admin, rot, "Idempotency-Key", "k2"), 200)
	if rr["secret"] != nil || rr["secret_redacted"] != true {
		t.Fatalf("rotate replay = %v", rr)
	}
}

func TestWebhookCreate_withoutSecretKey_is503SecretKeyRequired(t *testing.T) {
	a := webhookApp(t, false)
	problem(t, a.do("POST", "/v1/webhooks", admin, `{"url": "`+hookURL+`", "actions": ["*"]}`), 503, "secret_key_required")
}
