package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/webhook"
	"github.com/promptd/promptd/webhook/webhooktest"
)

// outage is how long the failing receiver is down (connection refused).
const outage = time.Minute

// e2eBackoff is the retry schedule of the test (PROMPTD_WEBHOOK_BACKOFF):
// shortened from production's 5 s .. 6 h, and long enough in all (25
// retries, about 3 minutes on average with full jitter) that a minute of
// outage never exhausts it.
var e2eBackoff = "200ms,500ms,1s,2s,5s" + strings.Repeat(",15s", 20)

// Two promptd processes on one MySQL and Redis deliver to a receiver that
// fails the first 3 attempts of every message, while one process is
// killed (SIGKILL) with deliveries in flight and restarted, and then the
// receiver is down for a minute: every event is delivered, every attempt's
// signature verifies with the Standard Webhooks reference library, the
// attempts of one message share its webhook-id, and no two attempts of one
// message are ever in flight at once. A second, healthy receiver keeps
// getting its events promptly throughout.
func TestWebhooks_twoInstancesKillAndOutage_deliverEveryEventOneAttemptAtATime(t *testing.T) {
	const adm = "hooks-admin-secret-0123456789"
	vars := map[string]string{
		"PROMPTD_MYSQL_DSN": testenv.MySQLDSN(t), "PROMPTD_REDIS_URL": testenv.RedisURL(t),
		"PROMPTD_KEY_PREFIX": fmt.Sprintf("wh%d", time.Now().UnixNano()), "PROMPTD_TOKENS": "ops:admin:" + adm,
		"PROMPTD_SECRET_KEY": webhook.NewKey(), "PROMPTD_WEBHOOK_ALLOW_HTTP": "true", "PROMPTD_WEBHOOK_ALLOW_PRIVATE": "true",
		"PROMPTD_WEBHOOK_BACKOFF": e2eBackoff,
	}
	start := func(name string) *testenv.Promptd {
		v := map[string]string{"PROMPTD_INSTANCE_ID": name}
		for k, val := range vars {
			v[k] = val
		}
		return testenv.StartPromptd(t, v)
	}
	a, b := start("node-a"), start("node-b")

	flaky := webhooktest.NewReceiver(t)
	flaky.FailFirst, flaky.Hold = 3, 100*time.Millisecond
	healthy := webhooktest.NewReceiver(t)
	w := must(t, 201)(callJSON(t, "POST", a.URL+"/v1/webhooks", adm, `{"url": "`+flaky.URL()+`", "actions": ["version.created"]}`))
	must(t, 201)(callJSON(t, "POST", b.URL+"/v1/webhooks", adm, `{"url": "`+healthy.URL()+`", "actions": ["version.*"]}`))

	version := 0
	publish := func(p *testenv.Promptd, n int) {
		t.Helper()
		for range n {
			must(t, 201)(callJSON(t, "POST", p.URL+"/v1/agents/support/versions", adm,
				fmt.Sprintf(`{"base_version": %d, "config": {"system": "v%d"}}`, version, version+1)))
			version++
		}
	}
	waitUntil := func(within time.Duration, what string, ok func() bool) time.Duration {
		t.Helper()
		began := time.Now()
		for !ok() {
			if time.Since(began) > within {
				t.Fatalf("not within %s: %s", within, what)
			}
			time.Sleep(50 * time.Millisecond)
		}
		return time.Since(began)
	}

	// 1. Events from both instances; node-a is killed while attempts are in flight.
	publish(a, 10)
	publish(b, 10)
	flaky.SetHold(500 * time.Millisecond) // attempts stay in flight long enough to be cut by the kill
	waitUntil(20*time.Second, "attempts in flight", func() bool { return len(flaky.Attempts()) >= 5 && flaky.InFlight() >= 4 })
	inFlight := flaky.InFlight()
	a.Kill()
	flaky.SetHold(100 * time.Millisecond)
	publish(b, 10)
	a.Restart()

	// 2. The receiver is down for a minute while events keep coming; the
	// healthy receiver gets its events within seconds all the same.
	failover := waitUntil(30*time.Second, "the healthy receiver's events before the outage",
		func() bool { return healthy.Delivered() == version })
	flaky.Down(outage)
	downAt := time.Now()
	publish(a, 5)
	publish(b, 5)
	healthyLag := waitUntil(30*time.Second, "the healthy receiver's events during the outage",
		func() bool { return healthy.Delivered() == version })
	if time.Since(downAt) >= outage {
		t.Fatalf("the healthy receiver's events took the whole outage")
	}

	// 3. Every event reaches the flaky receiver.
	waitUntil(outage+3*time.Minute, fmt.Sprintf("%d events delivered to the flaky receiver", version),
		func() bool { return flaky.Delivered() == version })
	allAt := time.Since(downAt)
	attempts := flaky.Attempts()
	perID := map[string]int{}
	successes := map[string]int{}
	for _, at := range attempts {
		perID[at.ID]++
		if at.Status < 300 {
			successes[at.ID]++
		}
		if !strings.HasPrefix(at.ID, "msg_") || !strings.HasSuffix(at.ID, "_"+w["id"].(string)) {
			t.Fatalf("webhook-id %q is not msg_<seq>_<webhook id>", at.ID)
		}
	}
	if len(perID) != version {
		t.Fatalf("%d distinct webhook-ids for %d events", len(perID), version)
	}
	dups := 0
	for id, n := range perID {
		if n < 4 {
			t.Errorf("%s: %d attempts reached the receiver; it fails the first 3", id, n)
		}
		dups += successes[id] - 1
	}
	if n := flaky.Overlaps(); n != 0 {
		t.Fatalf("%d attempts arrived while another attempt of the same message was in flight", n)
	}
	res := webhooktest.Verify(t, w["secret"].(string), attempts)
	if res.Failed != 0 || res.Verified != len(attempts) {
		t.Fatalf("standardwebhooks: %s", res)
	}
	code, ds := callJSON(t, "GET", b.URL+"/v1/webhooks/"+w["id"].(string)+"/deliveries?limit=100", adm, "")
	items, _ := ds["items"].([]any)
	if code != 200 || len(items) != version {
		t.Fatalf("deliveries: %d, %d items", code, len(items))
	}
	for _, it := range items {
		if d := it.(map[string]any); d["state"] != "delivered" {
			t.Fatalf("delivery %v", d)
		}
	}
	t.Logf("%d attempts in flight (of both instances) when node-a was killed; the healthy receiver had every event %s after the restart",
		inFlight, failover.Round(time.Millisecond))
	t.Logf("%d events, %d attempts reached the receiver, %d duplicate successes, 0 overlaps, %d signatures verified by standardwebhooks; "+
		"healthy receiver got the outage's events in %s; all delivered %s after the outage began (outage %s)",
		version, len(attempts), dups, res.Verified, healthyLag.Round(time.Millisecond), allAt.Round(time.Second), outage)
}
