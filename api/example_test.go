package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/promptd/promptd"
	"github.com/promptd/promptd/api"
	"github.com/promptd/promptd/sqlstore"
)

func Example() {
	dir, _ := os.MkdirTemp("", "api-example")
	defer os.RemoveAll(dir)
	rt, _ := promptd.Open(context.Background(), sqlstore.Config{SQLitePath: filepath.Join(dir, "promptd.db")},
		promptd.Options{Logger: slog.New(slog.DiscardHandler)})
	defer rt.Close()
	s := api.New(api.Config{
		Runtime: rt, // the application the /v1 routes serve
		Checks: api.Checks{
			SQL:   func(context.Context) error { return nil }, // say, db.PingContext
			Redis: nil,                                        // no Redis configured
		},
	})

	for _, path := range []string{"/healthz", "/readyz", "/v1/unknown"} {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		fmt.Print(rec.Code, " ", rec.Header().Get("Content-Type"), " ", rec.Body.String())
	}
	// Output:
	// 200 application/json {"status":"ok"}
	// 200 application/json {"sql":"ok","redis":"disabled","etcd":"disabled","mode":"normal"}
	// 404 application/problem+json {"code":"not_found","detail":"no such route","status":404,"title":"Not found","type":"urn:promptd:problem:not_found"}
}

// The /v1 routes over a runtime: an admin token publishes, a runtime
// token resolves.
func Example_publishAndResolve() {
	dir, _ := os.MkdirTemp("", "api-example")
	defer os.RemoveAll(dir)
	rt, _ := promptd.Open(context.Background(), sqlstore.Config{SQLitePath: filepath.Join(dir, "promptd.db")},
		promptd.Options{Instance: "example", Logger: slog.New(slog.DiscardHandler)})
	defer rt.Close()

	s := api.New(api.Config{
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		Runtime: rt,
		Tokens: []api.Token{
			{Name: "ops", Role: api.RoleAdmin, Secret: "admin-secret-0123456789"},
			{Name: "agent", Role: api.RoleRuntime, Secret: "runtime-secret-0123456789"},
		},
	})
	call := func(method, path, token, body string) {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		var out struct {
			Code    string
			Version int
			Config  struct{ System string }
		}
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		if out.Code != "" {
			fmt.Println(method, path, rec.Code, out.Code)
			return
		}
		fmt.Printf("%s %s %d version %d %q\n", method, path, rec.Code, out.Version, out.Config.System)
	}
	call("POST", "/v1/agents/support/versions", "admin-secret-0123456789", `{"base_version": 0, "config": {"system": "Be brief."}}`)
	call("POST", "/v1/agents/support/versions", "runtime-secret-0123456789", `{"base_version": 1, "config": {"system": "x"}}`)
	call("PUT", "/v1/agents/support/envs/prod", "admin-secret-0123456789", `{"version": 1, "expected_revision": 0}`)
	call("GET", "/v1/agents/support/envs/prod/prompt", "runtime-secret-0123456789", "")
	// Output:
	// POST /v1/agents/support/versions 201 version 1 "Be brief."
	// POST /v1/agents/support/versions 403 forbidden
	// PUT /v1/agents/support/envs/prod 201 version 1 ""
	// GET /v1/agents/support/envs/prod/prompt 200 version 1 "Be brief."
}
