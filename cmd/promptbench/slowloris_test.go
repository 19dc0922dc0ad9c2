package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestSlowloris_againstAServerWithTimeouts_reportsAllClosed(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.Error(w, "no token", http.StatusUnauthorized)
		}
	}))
	srv.Config.ReadHeaderTimeout, srv.Config.ReadTimeout = 300*time.Millisecond, 500*time.Millisecond
	srv.Start()
	defer srv.Close()
	var out bytes.Buffer
	err := runSlowloris(context.Background(), []string{"-url", srv.URL, "-conns", "40", "-wait", "10s"}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"connections opened   40 (dial errors 0)", "still open at end    0", "headers+1-body-byte"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestSlowloris_serverWithoutTimeouts_fails(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	var out bytes.Buffer
	err := runSlowloris(context.Background(), []string{"-url", srv.URL, "-conns", "8", "-wait", "500ms"}, &out)
	if err == nil || !strings.Contains(err.Error(), "left") {
		t.Fatalf("err = %v, want connections left open\n%s", err, out.String())
	}
}

func TestSlowloris_badURL_fails(t *testing.T) {
	if err := runSlowloris(context.Background(), []string{"-url", "localhost:8080"}, &bytes.Buffer{}); err == nil {
		t.Fatal("a URL without http:// was accepted")
	}
}
