package main

import (
	"context"
	"testing"
	"time"

	"github.com/promptd/promptd/internal/slowloris"
)

// The CI-sized run of `promptbench slowloris` (docs/benchmarks.md: the
// 20,000 connection run): 2,000 slow or idle connections against promptd with
// short timeouts. /healthz must answer within 1s throughout, and the
// server must close every connection within its timeout plus slack.
func TestMain_manySlowConnections_healthzAnswers_andAllAreClosed(t *testing.T) {
	const headerTimeout, readTimeout = 2 * time.Second, 3 * time.Second
	_, addr := openLimited(t, map[string]string{
		"PROMPTD_READ_HEADER_TIMEOUT": headerTimeout.String(),
		"PROMPTD_READ_TIMEOUT":        readTimeout.String(),
		"PROMPTD_MAX_CONNS":           "1500", // below the load: new connections take idle ones' places
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := slowloris.Run(ctx, slowloris.Options{Addr: addr, Conns: 2000, Wait: 30 * time.Second, Dialers: 16})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", r)
	if r.DialErrors > 0 {
		t.Errorf("%d connections could not be opened", r.DialErrors)
	}
	if r.ProbeErrors > 0 || r.ProbeMax > time.Second {
		t.Errorf("/healthz: %d of %d probes failed, slowest %s; want all within 1s", r.ProbeErrors, r.Probes, r.ProbeMax)
	}
	if !r.Closed() {
		t.Fatalf("%d connections still open 30s after the last was opened", r.StillOpen)
	}
	const slack = 3 * time.Second
	for k, limit := range map[slowloris.Kind]time.Duration{
		slowloris.Idle: headerTimeout, slowloris.Partial: headerTimeout, slowloris.Headers: readTimeout, slowloris.Body: readTimeout,
	} {
		if r.ClosedMax[k] > limit+slack {
			t.Errorf("%s connections stayed open up to %s, want at most %s + %s", k, r.ClosedMax[k], limit, slack)
		}
	}
}
