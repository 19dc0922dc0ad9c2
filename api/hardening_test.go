package api_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestIntake_deepBrackets_everyWriteRoute: 3 MiB of '[' with an
// Idempotency-Key killed the process (the key's canonical hash recursed
// until the stack overflowed). Every write route now refuses it: at once
// by Content-Length where it is over the route's limit (413), and where the
// length is not known up front (chunked) or within the limit (/v1/import),
// at the 65th byte (400 invalid_json), the rest unread. Allocation over all
// the requests stays far below one body.
func TestIntake_deepBrackets_everyWriteRoute(t *testing.T) {
	a := sqliteApp(t)
	a.createVersion("a", 0, "one")
	a.createVersion("a", 1, "two")
	a.publish("a", "prod", 1, 0)
	a.ok(a.do("POST", "/v1/sessions", runtime, `{"session_id": "s", "agent": "a", "env": "prod"}`), 201)
	before := a.counts()
	body := strings.Repeat("[", 3<<20)
	var ms0, ms1 goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&ms0)
	n := 0
	for _, r := range fuzzRoutes {
		for _, chunked := range []bool{false, true} {
			for _, key := range []string{"", "deep-1"} {
				rq := httptest.NewRequest(r.method, r.path, strings.NewReader(body))
				rq.Header.Set("Authorization", "Bearer "+r.token)
				if chunked {
					rq.ContentLength = -1
				}
				if key != "" {
					rq.Header.Set("Idempotency-Key", key)
				}
				if strings.HasSuffix(r.path, "/renew") {
					rq.Header.Set("Lease-Token", "t") // checked before the body
				}
				rec := do(t, a.h, rq)
				n++
				want, code := 400, "invalid_json"
				if !chunked && r.path != "/v1/import" {
					want, code = 413, "body_too_large"
				}
				p := problem(t, rec, want, code)
				if want == 400 && !strings.Contains(p["detail"].(string), "nested deeper than 64") {
					t.Errorf("%s %s: detail %v", r.method, r.path, p["detail"])
				}
			}
		}
	}
	goruntime.ReadMemStats(&ms1)
	alloc := ms1.TotalAlloc - ms0.TotalAlloc
	t.Logf("%d requests of 3 MiB of '[' to %d write routes: %.1f MiB allocated in all", n, len(fuzzRoutes), float64(alloc)/(1<<20))
	if alloc > 50<<20 {
		t.Fatalf("%d bytes allocated", alloc)
	}
	if after := a.counts(); after != before {
		t.Fatalf("rows changed: %+v -> %+v", before, after)
	}
}

// TestIntake_invalidUTF8_isRefusedNamingTheField: invalid UTF-8 inside
// JSON strings was a 500 on MySQL (Error 1366), stored and echoed as
// invalid JSON on SQLite, and elsewhere replaced by U+FFFD (two configs
// with one hash). Now: 400 invalid_json naming the member, nothing stored.
func TestIntake_invalidUTF8_isRefusedNamingTheField(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.createVersion("a", 0, "one")
		a.publish("a", "prod", 1, 0)
		a.ok(a.do("POST", "/v1/sessions", runtime, `{"session_id": "s", "agent": "a", "env": "prod"}`), 201)
		before := a.counts()
		for _, tc := range []struct{ name, method, path, token, body, field string }{
			{"turn content", "POST", "/v1/sessions/s/turns", runtime, "{\"expected_revision\": 0, \"turns\": [{\"role\": \"user\", \"content\": \"ok\"}, {\"role\": \"user\", \"content\": \"a\xffb\"}]}", "turns[1].content"},
			{"turn content, lone surrogate", "POST", "/v1/sessions/s/turns", runtime, `{"expected_revision": 0, "turns": [{"role": "user", "content": "a\ud800b"}]}`, "turns[0].content"},
			{"turn metadata", "POST", "/v1/sessions/s/turns", runtime, "{\"expected_revision\": 0, \"turns\": [{\"role\": \"user\", \"content\": \"x\", \"metadata\": {\"k\": \"\xc3\x28\"}}]}", "turns[0].metadata.k"},
			{"session metadata", "POST", "/v1/sessions", runtime, "{\"session_id\": \"s2\", \"agent\": \"a\", \"env\": \"prod\", \"metadata\": {\"who\": \"\xed\xa0\x80\"}}", "metadata.who"},
			{"state value", "PUT", "/v1/sessions/s/state/k", runtime, "{\"expected_revision\": 0, \"value\": {\"notes\": [\"\xff\"]}}", "value.notes[0]"},
			{"config", "POST", "/v1/agents/a/versions", admin, "{\"base_version\": 1, \"config\": {\"system\": \"caf\xe9\"}}", "config.system"},
			{"config, lone surrogate", "POST", "/v1/agents/a/versions", admin, `{"base_version": 1, "config": {"system": "\udfff"}}`, "config.system"},
			{"key", "POST", "/v1/agents/a/versions", admin, "{\"base_version\": 1, \"config\": {\"system\": \"x\", \"model\": {\"n\xffame\": \"m\"}}}", "config.model"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				for _, key := range []string{"", "utf8-" + tc.name} {
					hdr := []string{}
					if key != "" {
						hdr = []string{"Idempotency-Key", key}
					}
					p := problem(t, a.do(tc.method, tc.path, tc.token, tc.body, hdr...), 400, "invalid_json")
					if p["field"] != tc.field {
						t.Errorf("field = %v, want %s (%v)", p["field"], tc.field, p["detail"])
					}
				}
			})
		}
		if after := a.counts(); after != before {
			t.Fatalf("rows changed: %+v -> %+v", before, after)
		}
		s := a.ok(a.do("GET", "/v1/sessions/s", runtime, ""), 200)
		if s["revision"] != float64(0) || len(s["turns"].([]any)) != 0 || len(s["state_keys"].([]any)) != 0 {
			t.Fatalf("session changed: %v", s)
		}
	})
}

// cutReader yields a prefix of a body, then fails as a connection closed
// mid-body does.
type cutReader struct {
	r   io.Reader
	err error
}

func (c *cutReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err == io.EOF {
		return n, c.err
	}
	return n, err
}

// serverErrors counts the 5xx answers in the HTTP latency histogram.
func serverErrors(t *testing.T, g prometheus.Gatherer) uint64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, mf := range mfs {
		if mf.GetName() != "promptd_http_request_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "status" && strings.HasPrefix(l.GetValue(), "5") {
					n += m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return n
}

// TestClientAbort_isNeverAServerError: a truncated body, and a client that
// disconnects while its write runs, were logged as ERROR and counted as
// 500 internal (or 503). Now a truncated body is 400 invalid_json and a
// request whose client left is recorded as 499, logged at debug level.
func TestClientAbort_isNeverAServerError(t *testing.T) {
	var reg *prometheus.Registry
	a := sqliteApp(t, func(c *apiConfig) {
		reg = prometheus.NewRegistry()
		c.Registerer, c.Gatherer = reg, reg
	})
	a.createVersion("a", 0, "one")
	a.publish("a", "prod", 1, 0)
	before := a.counts()

	for _, cut := range []error{io.ErrUnexpectedEOF, errors.New("read tcp 127.0.0.1:8080->127.0.0.1:5555: connection reset by peer")} {
		rq := httptest.NewRequest("POST", "/v1/agents/a/versions", &cutReader{r: strings.NewReader(`{"base_version": 1, "config": {"sys`), err: cut})
		rq.Header.Set("Authorization", "Bearer "+admin)
		rq.Header.Set("Idempotency-Key", "cut")
		problem(t, do(t, a.h, rq), 400, "invalid_json")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the client is gone before promptd starts the write
	for _, r := range []struct{ method, path, token, body string }{
		{"POST", "/v1/agents/a/versions", admin, `{"base_version": 1, "config": {"system": "two"}}`},
		{"PUT", "/v1/agents/a/envs/prod", admin, `{"version": 1, "expected_revision": 1}`},
		{"POST", "/v1/sessions", runtime, `{"agent": "a", "env": "prod"}`},
		{"POST", "/v1/agents/a/envs/prod/assemble", runtime, `{"variables": {}}`},
	} {
		rq := req(r.method, r.path, r.token, r.body).WithContext(ctx)
		rec := httptest.NewRecorder() // not do(): a 499 is never sent, there is nobody to check it against the spec
		a.h.ServeHTTP(rec, rq)
		if rec.Code >= 500 && rec.Code != 499 {
			t.Errorf("%s %s with the client gone: %d %s", r.method, r.path, rec.Code, rec.Body)
		}
	}
	if n := serverErrors(t, reg); n != 0 {
		t.Errorf("%d 5xx answers recorded", n)
	}
	if logs := a.logs.String(); strings.Contains(logs, `"level":"ERROR"`) {
		t.Errorf("an ERROR line was logged:\n%s", logs)
	}
	if after := a.counts(); after.versions != before.versions {
		t.Fatalf("rows changed: %+v -> %+v", before, after)
	}
	// Control: a real internal failure is still a logged 5xx.
	_ = a.store.Close()
	sqlDB, _ := a.db.DB()
	_ = sqlDB.Close()
	rec := a.do("POST", "/v1/agents/a/versions", admin, `{"base_version": 1, "config": {"system": "two"}}`)
	if rec.Code < 500 || serverErrors(t, reg) == 0 || !strings.Contains(a.logs.String(), `"level":"ERROR"`) {
		t.Fatalf("control: a closed database answered %d and was not logged as an error", rec.Code)
	}
}

// TestIdempotency_escapedPathValues_doNotShareAScope: the scope was
// "name|method|path|key", so PUT .../state/k%7Cx with key "y" and PUT
// .../state/k with key "x|y" collided and the second replayed the first's
// 400 instead of writing.
func TestIdempotency_escapedPathValues_doNotShareAScope(t *testing.T) {
	a := sqliteApp(t)
	a.createVersion("a", 0, "one")
	a.publish("a", "prod", 1, 0)
	a.ok(a.do("POST", "/v1/sessions", runtime, `{"session_id": "s", "agent": "a", "env": "prod"}`), 201)
	body := `{"expected_revision": 0, "value": 1}`
	problem(t, a.do("PUT", "/v1/sessions/s/state/k%7Cx", runtime, body, "Idempotency-Key", "y"), 400, "invalid_id")
	rec := a.do("PUT", "/v1/sessions/s/state/k", runtime, body, "Idempotency-Key", "x|y")
	if rec.Code != http.StatusOK || rec.Header().Get("Idempotent-Replayed") != "" {
		t.Fatalf("PUT state/k with key x|y = %d %s (replayed %q)", rec.Code, rec.Body, rec.Header().Get("Idempotent-Replayed"))
	}
}
