package api_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/promptd/promptd/api"
)

func Example() {
	s := api.New(api.Config{
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
	// 200 application/json {"sql":"ok","redis":"disabled","mode":"normal"}
	// 404 application/problem+json {"code":"not_found","detail":"no such route","status":404,"title":"Not found","type":"urn:promptd:problem:not_found"}
}
