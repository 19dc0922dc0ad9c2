package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd"
	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/problem"
	"github.com/promptd/promptd/sqlstore"
	"github.com/promptd/promptd/webhook"
	"github.com/promptd/promptd/webhook/webhooktest"
)

// fast is a short retry schedule for tests (production: DefaultBackoff,
// 5 s .. 6 h).
var fast = []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond, 100 * time.Millisecond,
	100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond}

func testKey(t *testing.T) *webhook.Cipher {
	key, _ := webhook.ParseKey(webhook.NewKey())
	c, err := webhook.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// runtime is promptd over db with webhooks that may call loopback receivers.
func runtime(t *testing.T, db *gorm.DB, mod func(*webhook.Options)) *promptd.Runtime {
	o := webhook.Options{Cipher: testKey(t), Guard: webhook.Guard{AllowHTTP: true, AllowPrivate: true}, Backoff: fast,
		Poll: 20 * time.Millisecond}
	if mod != nil {
		mod(&o)
	}
	rt := promptd.New(db, promptd.Options{Instance: "test-1", Webhooks: o, EventFlush: 20 * time.Millisecond})
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}

// emit writes n audit events of action, as a domain change does.
func emit(t *testing.T, db *gorm.DB, action, agent string, n int) {
	t.Helper()
	for i := range n {
		err := db.Transaction(func(tx *gorm.DB) error {
			return audit.Log{Instance: "test-1"}.Append(context.Background(), tx,
				audit.Event{Action: action, Agent: agent, Resource: fmt.Sprintf("agents/%s/%d", agent, i)}, map[string]any{"revision": i + 1})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func waitFor(t *testing.T, within time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestDelivery_whenReceiverFailsThreeAttempts_isDeliveredOnTheFourthSignedWithOneID(t *testing.T) {
	testenv.ForEachDialect(t, promptd.Migrations(), func(t *testing.T, db *gorm.DB) {
		recv := webhooktest.NewReceiver(t)
		recv.FailFirst = 3
		rt := runtime(t, db, nil)
		ctx := context.Background()
		w, err := rt.Webhooks.Create(ctx, webhook.CreateInput{URL: recv.URL(), Actions: []string{"version.*"}, Agents: []string{"support"}})
		if err != nil {
			t.Fatal(err)
		}
		emit(t, db, "version.created", "support", 5)
		emit(t, db, "version.created", "other", 2)   // another agent: not delivered
		emit(t, db, "session.created", "support", 2) // another action: not delivered
		waitFor(t, 30*time.Second, "5 deliveries", func() bool { return recv.Delivered() == 5 })
		time.Sleep(200 * time.Millisecond) // nothing more arrives
		attempts := recv.Attempts()
		perID := map[string]int{}
		for _, a := range attempts {
			perID[a.ID]++
			var body struct {
				Type string `json:"type"`
				Data struct {
					Seq   int64  `json:"seq"`
					Agent string `json:"agent"`
				} `json:"data"`
			}
			if err := json.Unmarshal(a.Body, &body); err != nil || body.Type != "version.created" || body.Data.Agent != "support" {
				t.Fatalf("body %s: %v", a.Body, err)
			}
			if a.ID != webhook.MessageID(body.Data.Seq, w.ID) {
				t.Fatalf("webhook-id %s for seq %d", a.ID, body.Data.Seq)
			}
		}
		if len(perID) != 5 || len(attempts) != 20 {
			t.Fatalf("%d messages in %d attempts; want 5 in 20 (3 failures and a success each): %v", len(perID), len(attempts), perID)
		}
		if res := webhooktest.Verify(t, w.Secret, attempts); res.Verified != 20 || res.Failed != 0 {
			t.Fatalf("standardwebhooks: %s", res)
		}
		ds, _, err := rt.Webhooks.Deliveries(ctx, w.ID, 0, 50)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if d.State != webhook.Delivered || d.Attempts != 4 || d.LastStatus != 204 || d.LastError != "" {
				t.Fatalf("delivery %+v; want delivered after 4 attempts", d)
			}
		}
	})
}

func TestDelivery_whenReceiverAnswers410_disablesTheWebhook(t *testing.T) {
	db := testenv.OpenDB(t, sqliteCfg(t), promptd.Migrations())
	gone := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusGone) }))
	defer gone.Close()
	rt := runtime(t, db, nil)
	ctx := context.Background()
	w, err := rt.Webhooks.Create(ctx, webhook.CreateInput{URL: gone.URL, Actions: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	emit(t, db, "version.created", "a", 1)
	waitFor(t, 10*time.Second, "the webhook disabled", func() bool {
		got, err := rt.Webhooks.Get(ctx, w.ID)
		return err == nil && !got.Enabled
	})
	// Both deliveries (the webhook's own webhook.created, and
	// version.created) are attempted at once: whichever the receiver
	// answered first is the one failed with http_410 (CI saw the newer).
	ds, _, _ := rt.Webhooks.Deliveries(ctx, w.ID, 0, 10)
	failed := 0
	for _, d := range ds {
		if d.State == webhook.Failed && d.LastError == "http_410" {
			failed++
		}
	}
	if failed == 0 {
		t.Fatalf("deliveries %+v; want one failed with http_410", ds)
	}
}

func TestRetryAfter_isHonouredUpToAnHour(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{"": 0, "7": 7 * time.Second, "86400": time.Hour, "-3": 0, "soon": 0,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second} {
		if got := webhook.RetryAfter(v, now); got != want {
			t.Errorf("Retry-After %q = %s, want %s", v, got, want)
		}
	}
}

func TestCreate_pastTheLimits_isRefused(t *testing.T) {
	db := testenv.OpenDB(t, sqliteCfg(t), promptd.Migrations())
	rt := runtime(t, db, func(o *webhook.Options) { o.MaxWebhooks = 2 })
	ctx := context.Background()
	for i := range 2 {
		if _, err := rt.Webhooks.Create(ctx, webhook.CreateInput{URL: "http://127.0.0.1:9/" + fmt.Sprint(i), Actions: []string{"*"}}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := rt.Webhooks.Create(ctx, webhook.CreateInput{URL: "http://127.0.0.1:9/x", Actions: []string{"*"}})
	var le *problem.LimitError
	if !errors.As(err, &le) || le.Limit != 2 {
		t.Fatalf("third create: %v; want a LimitError of 2", err)
	}
	none := promptd.New(db, promptd.Options{Instance: "no-key"})
	defer none.Close()
	if _, err := none.Webhooks.Create(ctx, webhook.CreateInput{URL: "https://example.com", Actions: []string{"*"}}); !errors.Is(err, webhook.ErrNoSecretKey) {
		t.Fatalf("create without a key: %v; want ErrNoSecretKey", err)
	}
}

func TestQueue_pastMaxPending_recordsQueueFull(t *testing.T) {
	db := testenv.OpenDB(t, sqliteCfg(t), promptd.Migrations())
	// A receiver that never answers 2xx keeps deliveries pending.
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) }))
	defer down.Close()
	rt := runtime(t, db, func(o *webhook.Options) {
		o.MaxPending = 3
		o.Backoff = []time.Duration{time.Hour}
	})
	ctx := context.Background()
	w, err := rt.Webhooks.Create(ctx, webhook.CreateInput{URL: down.URL, Actions: []string{"version.*"}})
	if err != nil {
		t.Fatal(err)
	}
	emit(t, db, "version.created", "a", 5)
	var ds []webhook.Delivery
	waitFor(t, 10*time.Second, "5 deliveries", func() bool {
		ds, _, _ = rt.Webhooks.Deliveries(ctx, w.ID, 0, 10)
		return len(ds) == 5
	})
	var states []string
	for _, d := range ds {
		states = append(states, d.State+"/"+d.LastError)
	}
	got := strings.Join(states, " ")
	if strings.Count(got, "failed/queue_full") != 2 || strings.Count(got, "pending/") != 3 {
		t.Fatalf("deliveries newest first: %s; want the 2 newest failed/queue_full and 3 pending", got)
	}
	// A manual retry queues one again.
	d, err := rt.Webhooks.Retry(ctx, w.ID, ds[0].ID)
	if err != nil || d.State != webhook.Pending {
		t.Fatalf("retry: %+v %v", d, err)
	}
	if _, err := rt.Webhooks.Retry(ctx, w.ID, 999999); !errors.Is(err, webhook.ErrDeliveryNotFound) {
		t.Fatalf("retry of an unknown delivery: %v", err)
	}
}

func TestCreate_concurrentlyOnTwoInstances_neverPassesTheLimit(t *testing.T) {
	db := testenv.OpenDB(t, sqlstore.Config{MySQLDSN: testenv.MySQLDSN(t)}, promptd.Migrations())
	limit := func(o *webhook.Options) { o.MaxWebhooks = 5 }
	rts := []*promptd.Runtime{runtime(t, db, limit), runtime(t, db, limit)}
	ctx := context.Background()
	var wg sync.WaitGroup
	var created atomic.Int64
	for i := range 20 {
		wg.Go(func() {
			_, err := rts[i%2].Webhooks.Create(ctx, webhook.CreateInput{URL: fmt.Sprintf("http://127.0.0.1:9/%d", i), Actions: []string{"x.y"}})
			var le *problem.LimitError
			switch {
			case err == nil:
				created.Add(1)
			case errors.As(err, &le), errors.Is(err, sqlstore.ErrUnavailable): // a deadlock is a retryable outcome, never a 6th
			default:
				t.Errorf("create: %v", err)
			}
		})
	}
	wg.Wait()
	var n int64
	db.Raw(`SELECT COUNT(*) FROM webhooks`).Scan(&n)
	if n != 5 || created.Load() != 5 {
		t.Fatalf("%d webhooks exist (%d creates succeeded); the limit is 5", n, created.Load())
	}
}

func TestRetry_byHandDuringAnAttempt_keepsTheDeliveryOnItsSchedule(t *testing.T) {
	db := testenv.OpenDB(t, sqliteCfg(t), promptd.Migrations())
	release := make(chan struct{})
	var calls atomic.Int64
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) == 1 {
			<-release // the first attempt hangs until the test lets it fail
			w.WriteHeader(500)
			return
		}
		w.WriteHeader(204)
	}))
	defer recv.Close()
	rt := runtime(t, db, nil)
	ctx := context.Background()
	w, err := rt.Webhooks.Create(ctx, webhook.CreateInput{URL: recv.URL, Actions: []string{"version.*"}})
	if err != nil {
		t.Fatal(err)
	}
	emit(t, db, "version.created", "a", 1)
	waitFor(t, 10*time.Second, "the first attempt", func() bool { return calls.Load() == 1 })
	ds, _, _ := rt.Webhooks.Deliveries(ctx, w.ID, 0, 1)
	if _, err := rt.Webhooks.Retry(ctx, w.ID, ds[0].ID); err != nil {
		t.Fatal(err)
	}
	close(release)
	waitFor(t, 10*time.Second, "delivered after the retry", func() bool {
		ds, _, _ := rt.Webhooks.Deliveries(ctx, w.ID, 0, 1)
		return len(ds) == 1 && ds[0].State == webhook.Delivered
	})
}

func TestLease_whenAnInstanceClockRunsAhead_isNotTakenOverEarly(t *testing.T) {
	db := testenv.OpenDB(t, sqlstore.Config{MySQLDSN: testenv.MySQLDSN(t)}, promptd.Migrations())
	recv := webhooktest.NewReceiver(t)
	recv.Hold = 3 * time.Second // the attempt stays in flight
	key := testKey(t)
	a := runtime(t, db, func(o *webhook.Options) { o.Cipher = key })
	ctx := context.Background()
	if _, err := a.Webhooks.Create(ctx, webhook.CreateInput{URL: recv.URL(), Actions: []string{"version.*"}}); err != nil {
		t.Fatal(err)
	}
	emit(t, db, "version.created", "a", 1)
	waitFor(t, 10*time.Second, "instance a's attempt in flight", func() bool { return recv.InFlight() == 1 })
	// Instance b's clock is 20 s ahead: by it, a's 15 s lease has run out.
	runtime(t, db, func(o *webhook.Options) {
		o.Cipher = key
		o.Now = func() time.Time { return time.Now().Add(20 * time.Second) }
	})
	waitFor(t, 10*time.Second, "the delivery", func() bool { return recv.Delivered() == 1 })
	if n := recv.Overlaps(); n != 0 {
		t.Fatalf("%d attempts overlapped a's attempt in flight: b took over the lease by its own clock", n)
	}
}

func TestRotateSecret_signsWithBothSecretsForTheOverlap(t *testing.T) {
	db := testenv.OpenDB(t, sqliteCfg(t), promptd.Migrations())
	recv := webhooktest.NewReceiver(t)
	rt := runtime(t, db, nil)
	ctx := context.Background()
	w, err := rt.Webhooks.Create(ctx, webhook.CreateInput{URL: recv.URL(), Actions: []string{"version.*"}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := rt.Webhooks.RotateSecret(ctx, w.ID, w.Revision)
	if err != nil || r.OldSecretUntil == nil || r.OldSecretUntil.Sub(time.Now()) < 23*time.Hour {
		t.Fatalf("rotate: %+v %v", r, err)
	}
	if _, err := rt.Webhooks.RotateSecret(ctx, w.ID, w.Revision); err == nil {
		t.Fatal("a stale rotate was accepted")
	}
	emit(t, db, "version.created", "a", 1)
	waitFor(t, 10*time.Second, "the delivery", func() bool { return recv.Delivered() == 1 })
	at := recv.Attempts()
	if sigs := strings.Fields(at[0].Signature); len(sigs) != 2 {
		t.Fatalf("webhook-signature %q; want the new and the old signature", at[0].Signature)
	}
	for name, secret := range map[string]string{"new": r.Secret, "old": w.Secret} {
		if res := webhooktest.Verify(t, secret, at); res.Verified != 1 {
			t.Errorf("with the %s secret: %s", name, res)
		}
	}
}

// A receiver that answers 2xx in time but then sends its body slowly (past
// the attempt's timeout) has the event: it is delivered once, not counted
// as a timeout and sent again.
func TestDelivery_whenReceiverAnswers2xxInTimeButSendsItsBodySlowly_isDeliveredOnce(t *testing.T) {
	db := testenv.OpenDB(t, sqliteCfg(t), promptd.Migrations())
	var calls atomic.Int32
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for range 6 { // 600 ms of body, past the 200 ms timeout
			select {
			case <-r.Context().Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			_, _ = w.Write([]byte("."))
			w.(http.Flusher).Flush()
		}
	}))
	defer slow.Close()
	rt := runtime(t, db, func(o *webhook.Options) { o.Timeout = 200 * time.Millisecond })
	ctx := context.Background()
	w, err := rt.Webhooks.Create(ctx, webhook.CreateInput{URL: slow.URL, Actions: []string{"version.*"}})
	if err != nil {
		t.Fatal(err)
	}
	emit(t, db, "version.created", "a", 1)
	var ds []webhook.Delivery
	waitFor(t, 10*time.Second, "the delivery recorded", func() bool {
		ds, _, err = rt.Webhooks.Deliveries(ctx, w.ID, 0, 10)
		return err == nil && len(ds) == 1 && ds[0].State != webhook.Pending
	})
	time.Sleep(500 * time.Millisecond) // a retry would come within the fast schedule
	if ds[0].State != webhook.Delivered || ds[0].Attempts != 1 || ds[0].LastError != "" || calls.Load() != 1 {
		t.Fatalf("delivery %+v after %d calls; want delivered on the first", ds[0], calls.Load())
	}
}

// A retry's time is written in the clock it is compared with (the SQL
// server's on MySQL): an instance whose clock runs an hour ahead used to
// write next_attempt_at_ms an hour late by the SQL clock, and the retry
// waited that hour.
func TestRetry_whenTheRecordingInstanceClockRunsAhead_isNotDelayed(t *testing.T) {
	db := testenv.OpenDB(t, sqlstore.Config{MySQLDSN: testenv.MySQLDSN(t)}, promptd.Migrations())
	recv := webhooktest.NewReceiver(t)
	recv.FailFirst = 1
	rt := runtime(t, db, func(o *webhook.Options) { o.Now = func() time.Time { return time.Now().Add(time.Hour) } })
	ctx := context.Background()
	if _, err := rt.Webhooks.Create(ctx, webhook.CreateInput{URL: recv.URL(), Actions: []string{"version.*"}}); err != nil {
		t.Fatal(err)
	}
	emit(t, db, "version.created", "a", 1)
	waitFor(t, 15*time.Second, "the retry after the first failure", func() bool { return recv.Delivered() == 1 })
	if n := len(recv.Attempts()); n != 2 {
		t.Fatalf("%d attempts; want a failure and its retry", n)
	}
}

// A store restored from an older backup has a feed head below the
// dispatcher's cursor: the positions in between would be handed out again
// (to other events). The dispatcher treats it as an alarm: it waits, with
// *audit.AheadError, delivering nothing and keeping its cursor, instead of
// delivering reused positions or skipping. Control: with the cursor at the
// head, the same call dispatches.
func TestDispatch_whenTheStoreHeadIsBelowTheCursor_waitsAndDeliversNothing(t *testing.T) {
	testenv.ForEachDialect(t, promptd.Migrations(), func(t *testing.T, db *gorm.DB) {
		recv := webhooktest.NewReceiver(t)
		rt := runtime(t, db, nil)
		ctx := context.Background()
		w, err := rt.Webhooks.Create(ctx, webhook.CreateInput{URL: recv.URL(), Actions: []string{"version.*"}})
		if err != nil {
			t.Fatal(err)
		}
		emit(t, db, "version.created", "a", 3)
		count := func() int {
			ds, _, err := rt.Webhooks.Deliveries(ctx, w.ID, 0, 100)
			if err != nil {
				t.Fatal(err)
			}
			return len(ds)
		}
		waitFor(t, 10*time.Second, "3 deliveries", func() bool { return count() == 3 })
		m, err := audit.ReadMarks(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		// The store "went back": the dispatcher has read 10 positions past it.
		if err := db.Exec(`UPDATE webhook_cursor SET seq = ? WHERE name = 'dispatcher'`, m.Head+10).Error; err != nil {
			t.Fatal(err)
		}
		emit(t, db, "version.created", "b", 2)
		waitFor(t, 10*time.Second, "the 2 new events stamped", func() bool {
			m2, err := audit.ReadMarks(ctx, db)
			return err == nil && m2.Head == m.Head+2
		})
		_, cursor, err := rt.Webhooks.DispatchOnce(ctx)
		var ahead *audit.AheadError
		if !errors.As(err, &ahead) || cursor != m.Head+10 || ahead.Head != m.Head+2 {
			t.Fatalf("DispatchOnce with the store's head below the cursor = cursor %d, %v; want *audit.AheadError (head %d), cursor kept at %d",
				cursor, err, m.Head+2, m.Head+10)
		}
		time.Sleep(300 * time.Millisecond) // the background dispatcher meets the same
		if n := count(); n != 3 {
			t.Fatalf("%d deliveries while the store was behind, want the 3 from before", n)
		}
		// Control: the cursor back at the store's head, the new events go out.
		if err := db.Exec(`UPDATE webhook_cursor SET seq = ? WHERE name = 'dispatcher'`, m.Head).Error; err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "5 deliveries after the control", func() bool { return count() == 5 })
	})
}
