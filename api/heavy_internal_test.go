package api

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
)

// Heavy requests are bounded per token (429 quota_exceeded with
// Retry-After past it, while another token goes on) and per instance (a
// request past HeavyMax waits, then 503 overloaded).
func TestHeavy_perTokenAndInstanceBounds(t *testing.T) {
	s := &Server{heavyGate: newHeavyGate(2, 3)}
	e := echo.New()
	release := make(chan struct{})
	started := make(chan struct{}, 10)
	blocking := s.heavy(func(echo.Context) error { started <- struct{}{}; <-release; return nil })
	call := func(token string) chan error {
		c := e.NewContext(httptest.NewRequest(http.MethodGet, "/v1/bundle", nil), httptest.NewRecorder())
		c.Set(ctxActor, token)
		done := make(chan error, 1)
		go func() { done <- blocking(c) }()
		return done
	}
	a1, a2 := call("a"), call("a")
	<-started
	<-started
	var p *Error
	if err := <-call("a"); !errors.As(err, &p) || p.Code != "quota_exceeded" || p.Header.Get("Retry-After") != "1" {
		t.Fatalf("a third heavy request of token a = %v; want 429 quota_exceeded with Retry-After", err)
	}
	b1 := call("b") // the instance's third slot
	<-started
	if err := <-call("c"); !errors.As(err, &p) || p.Code != "overloaded" {
		t.Fatalf("a fourth heavy request on an instance bounded to 3 = %v; want 503 overloaded", err)
	}
	close(release)
	for _, d := range []chan error{a1, a2, b1} {
		if err := <-d; err != nil {
			t.Fatal(err)
		}
	}
	if n := len(s.heavyGate.perToken.open); n != 0 {
		t.Fatalf("%d tokens still counted after every request ended", n)
	}
}
