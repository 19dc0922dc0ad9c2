package api_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
)

// Intents and board batches over HTTP: register, overlap (409 naming the
// other, its scope and holder), a batch under the intent with its proof,
// a write outside the scope (422 outside_intent), after release
// (409 stale_fence), strict decoding of nested members, the feed's events.
func TestIntentsAndBatches_overHTTP(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		rec := a.do("POST", "/v1/intents", runtime, `{"holder": "importer-a", "description": "EU rows",
			"scope": {"records": [{"board": "crm", "prefixes": ["eu-"]}]}, "ttl_ms": 60000}`)
		in := a.ok(rec, 201)
		conforms(t, "RegisteredIntent", rec.Body.Bytes())
		id, fence := in["id"].(string), int64(in["fence"].(float64))
		rec = a.do("POST", "/v1/intents", runtime, `{"holder": "importer-b", "scope": {"records": [{"board": "crm", "ids": ["eu-7"]}]}}`)
		p := a.problem(rec, 409, "intent_conflict")
		if c := p["conflicts"].([]any)[0].(map[string]any); c["id"] != id || c["holder"] != "importer-a" {
			t.Fatalf("conflict = %v", p)
		}
		// advisory elsewhere: registered, no overlap
		a.ok(a.do("POST", "/v1/intents", runtime, `{"holder": "x", "mode": "advisory", "scope": {"boards": ["other"]}}`), 201)
		// strict: a mis-cased nested member
		a.problem(a.do("POST", "/v1/intents", runtime, `{"holder": "x", "scope": {"Boards": ["b"]}}`), 400, "invalid_field")
		// the overlap query
		l := a.ok(a.do("GET", "/v1/intents?record=crm/eu-1", runtime, ""), 200)
		if items := l["items"].([]any); len(items) != 1 || items[0].(map[string]any)["id"] != id {
			t.Fatalf("list = %v", l)
		}
		// a batch under the intent: the proof
		body := fmt.Sprintf(`{"mode": "all_or_nothing", "intent": {"id": %q, "fence": %d}, "items": [
			{"op": "create", "id": "eu-1", "payload": {"name": "Ada"}},
			{"op": "create", "id": "eu-2", "payload": {"name": "Bob"}}]}`, id, fence)
		rec = a.do("POST", "/v1/boards/crm/batches", runtime, body)
		b := a.ok(rec, 201)
		conforms(t, "BoardBatch", rec.Body.Bytes())
		if s := b["summary"].(map[string]any); s["created"] != float64(2) || b["intent_id"] != id {
			t.Fatalf("batch = %v", b)
		}
		got := a.ok(a.do("GET", "/v1/boards/crm/batches/"+b["id"].(string), runtime, ""), 200)
		if got["batch_fingerprint"] != b["batch_fingerprint"] {
			t.Fatalf("stored batch = %v", got)
		}
		// a stale update: 409 batch_rejected with the current revision and hash
		rec = a.do("POST", "/v1/boards/crm/batches", runtime, `{"mode": "all_or_nothing", "items": [
			{"op": "update", "id": "eu-1", "expected_revision": 5, "payload": {"name": "Ada L."}}]}`)
		p = a.problem(rec, 409, "batch_rejected")
		if c := p["results"].([]any)[0].(map[string]any)["conflict"].(map[string]any); c["code"] != "revision_conflict" || c["current_revision"] != float64(1) ||
			!strings.HasPrefix(c["content_hash"].(string), "sha256:") {
			t.Fatalf("rejected = %v", p)
		}
		// outside the intent's scope
		rec = a.do("PATCH", "/v1/boards/crm/records/eu-1", runtime, fmt.Sprintf(`{"expected_revision": 1, "payload": 1, "intent": {"id": %q, "fence": %d}}`, id, fence))
		a.ok(rec, 200)
		a.ok(a.do("POST", "/v1/boards/crm/records", runtime, `{"id": "us-1", "payload": 1}`), 201)
		rec = a.do("PATCH", "/v1/boards/crm/records/us-1", runtime, fmt.Sprintf(`{"expected_revision": 1, "payload": 2, "intent": {"id": %q, "fence": %d}}`, id, fence))
		if p := a.problem(rec, 422, "outside_intent"); p["intent_id"] != id {
			t.Fatalf("outside = %v", p)
		}
		// released: a late write is stale_fence
		a.ok(a.do("POST", "/v1/intents/"+id+"/release", runtime, fmt.Sprintf(`{"fence": %d}`, fence)), 200)
		rec = a.do("PATCH", "/v1/boards/crm/records/eu-1", runtime, fmt.Sprintf(`{"expected_revision": 2, "payload": 3, "intent": {"id": %q, "fence": %d}}`, id, fence))
		if p := a.problem(rec, 409, "stale_fence"); p["intent_id"] != id || p["state"] != "released" {
			t.Fatalf("late = %v", p)
		}
		a.problem(a.do("POST", "/v1/intents/"+id+"/renew", runtime, fmt.Sprintf(`{"fence": %d}`, fence)), 409, "stale_fence")
		a.problem(a.do("GET", "/v1/intents/int_nope", runtime, ""), 404, "intent_not_found")
		a.problem(a.do("POST", "/v1/boards/crm/batches", runtime, `{"mode": "all_or_nothing", "items": [{"op": "update", "id": "eu-1", "expected_revision": 1, "payload": 1, "Merge": true}]}`),
			400, "invalid_field")
	})
}

// problem checks that rec is the problem of code at status, in the
// contract's shape, and returns its members.
func (a *app) problem(rec *httptest.ResponseRecorder, status int, code string) map[string]any {
	a.t.Helper()
	if rec.Code != status {
		a.t.Fatalf("status = %d, want %d; body %s", rec.Code, status, rec.Body)
	}
	conforms(a.t, "Problem", rec.Body.Bytes())
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil || m["code"] != code {
		a.t.Fatalf("code = %v, want %s (%v)", m["code"], code, err)
	}
	return m
}
