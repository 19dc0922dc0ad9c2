package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/promptd/promptd"
	"github.com/promptd/promptd/api"
	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/session"
	"github.com/promptd/promptd/sqlstore"
)

// fuzzRoutes are every write endpoint, with the token it needs. Agent "a"
// has versions 1 and 2 with prod at 1; session "s" exists.
var fuzzRoutes = []struct{ method, path, token string }{
	{"POST", "/v1/agents/a/versions", admin},
	{"PUT", "/v1/agents/a/envs/prod", admin},
	{"POST", "/v1/agents/a/envs/prod/revocations", admin},
	{"POST", "/v1/agents/a/envs/prod/rollback", admin},
	{"POST", "/v1/agents/a/envs/prod/assemble", runtime},
	{"POST", "/v1/import", admin},
	{"POST", "/v1/agents/a/envs/prod/releases", admin},
	{"PATCH", "/v1/releases/rel_0000", admin},
	{"POST", "/v1/releases/rel_0000/pause", admin},
	{"POST", "/v1/sessions", runtime},
	{"POST", "/v1/sessions/s/turns", runtime},
	{"PUT", "/v1/sessions/s/state/k", runtime},
	{"POST", "/v1/sessions/s/close", runtime},
	{"POST", "/v1/sessions/s/lease", runtime},
	{"POST", "/v1/sessions/s/lease/renew", runtime},
	{"POST", "/v1/leases", runtime},
	{"POST", "/v1/leases/ls_b3JkZXI6MQ/renew", runtime},
}

// FuzzWriteEndpoints sends arbitrary bytes as bodies (not only JSON:
// invalid UTF-8, deep nesting, binary), sometimes cut short as a client
// that disconnects mid-body, with an arbitrary If-Match and sometimes an
// Idempotency-Key, to every write endpoint through the Echo handler over a
// real store: never a 500, never a panic, every error is problem+json with
// a code, and a 2xx answer is valid JSON.
func FuzzWriteEndpoints(f *testing.F) {
	seeds := []string{`{"base_version":2,"config":{"system":"x"}}`, `{"version":2,"expected_revision":1}`,
		`{"version":2,"reason":"r"}`, `{"expected_revision":1}`, `{"variables":{"persona":"p"},"history":true}`,
		`{"mode":"partial","items":[{"agent":"b","base_version":0,"config":{"system":"y"}}]}`,
		`{"candidate_version":2,"percent":12.5,"steps":[{"percent":50,"after":"1h"}]}`, `{"percent":1e400,"expected_revision":1}`,
		`{"session_id":"s2","agent":"a","env":"prod"}`, `{"expected_revision":0,"turns":[{"role":"user","content":"hi"}]}`,
		`{"value":{"x":[1,2]},"expected_revision":0}`, `{"holder":"h","ttl_ms":1000,"mode":"preempt"}`, `{"ttl_ms":1000}`,
		`{"resources":["order:1","machine/3"],"holder":"w","ttl_ms":1000}`, `{`, `[]`, `null`, `{"a":1,"a":2}`, "\"\xff\""}
	seeds = append(seeds, strings.Repeat("[", 100), `{"value":`+strings.Repeat(`{"a":`, 70)+`1`+strings.Repeat(`}`, 70)+`}`,
		"{\"turns\":[{\"role\":\"user\",\"content\":\"\xed\xa0\x80\"}],\"expected_revision\":0}", "\x00\x01\xfe\xff", `{"value":"\ud800"}`)
	for i, s := range seeds {
		f.Add(uint8(i%len(fuzzRoutes)), []byte(s), "", uint8(0))
	}
	f.Add(uint8(1), []byte(`{"version":2}`), `"1"`, uint8(0))
	f.Add(uint8(0), []byte(`{"base_version":2,"config":{"system":"x"}}`), "", uint8(7))
	db := testenv.OpenDB(f, sqlstore.Config{SQLitePath: filepath.Join(f.TempDir(), "fuzz.db")},
		migrations())
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	locker := locks.NewMemory(locks.Options{Holder: "fuzz"})
	rt := promptd.New(db, promptd.Options{Instance: "fuzz", Logger: logger, Locker: locker, EventFlush: 50 * time.Millisecond})
	f.Cleanup(func() { _ = rt.Close() })
	store, sessions := rt.Prompts, rt.Sessions
	h := api.New(api.Config{Logger: logger, Tokens: testTokens, Runtime: rt}).Handler()
	ctx := audit.WithActor(context.Background(), "fuzz")
	for i := 0; i < 2; i++ {
		if _, err := store.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "a", BaseVersion: i,
			Config: []byte(`{"system":"You are {{persona}}","variables":{"persona":{"default":"p"}}}`)}); err != nil {
			f.Fatal(err)
		}
	}
	if _, err := store.SwitchPointer(ctx, promptstore.SwitchInput{Agent: "a", Env: "prod", Version: 1, ExpectedRevision: new(int64)}); err != nil {
		f.Fatal(err)
	}
	if _, _, err := sessions.Create(ctx, session.CreateInput{SessionID: "s", Agent: "a", Env: "prod"}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte, ifMatch string, mode uint8) {
		r := fuzzRoutes[int(route)%len(fuzzRoutes)]
		var rd io.Reader = bytes.NewReader(body)
		if mode&1 != 0 { // the client goes away after half the body
			rd = &cutReader{r: bytes.NewReader(body[:len(body)/2]), err: io.ErrUnexpectedEOF}
		}
		rq := httptest.NewRequest(r.method, r.path, rd)
		if mode&2 != 0 {
			rq.Header.Set("Idempotency-Key", fmt.Sprintf("fuzz-%d", mode))
		}
		rq.Header.Set("Authorization", "Bearer "+r.token)
		rq.Header.Set("Content-Type", "application/json")
		if ifMatch != "" && len(ifMatch) < 64 && !strings.ContainsAny(ifMatch, "\r\n\x00") {
			rq.Header.Set("If-Match", ifMatch)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, rq)
		if rec.Code >= 500 && rec.Code != 503 {
			t.Fatalf("%s %s %q: %d %s", r.method, r.path, body, rec.Code, rec.Body)
		}
		if rec.Code >= 400 && !strings.Contains(rec.Body.String(), `"code":"`) {
			t.Fatalf("%s %s: %d without a problem code: %s", r.method, r.path, rec.Code, rec.Body)
		}
		if rec.Code < 300 && rec.Code != 204 && !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s %s %q: %d with invalid JSON: %q", r.method, r.path, body, rec.Code, rec.Body)
		}
	})
}
