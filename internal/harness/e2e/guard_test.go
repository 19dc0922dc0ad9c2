package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	promptclient "github.com/promptd/promptd/api/client"
	"github.com/promptd/promptd/webhook"
	"github.com/promptd/promptd/webhook/webhooktest"
)

// must-show 2 of issue 16: a release at 20 % with a rollback guard, and
// runtimes (the Go client) serving users from two instances and reporting
// outcomes of a simulated candidate that fails three times as often as the
// baseline (15 % against 5 %). Nobody calls rollback: the guard job rolls
// the release back; after its decision every instance serves the baseline
// to everyone within the propagation bound; the audit and a webhook carry
// the decision with both arms' figures.
func TestE2E_guardedRelease_candidateFailingThreeTimesAsOften_isRolledBackByTheGuard(t *testing.T) {
	hook := webhooktest.NewReceiver(t)
	c := startCluster(t, 2, map[string]string{"PROMPTD_GUARD_EVERY": "1s", "PROMPTD_SECRET_KEY": webhook.NewKey(),
		"PROMPTD_WEBHOOK_ALLOW_HTTP": "true", "PROMPTD_WEBHOOK_ALLOW_PRIVATE": "true"})
	a := c.nodes[0].URL
	seed(t, a, "shop", "prod", 2)
	must(t, 201, "POST", a+"/v1/webhooks", adminToken, map[string]any{"url": hook.URL(), "actions": []string{"release.*"}})
	var rel struct{ ID string }
	must(t, 201, "POST", a+"/v1/agents/shop/envs/prod/releases", adminToken, map[string]any{"candidate_version": 2, "percent": 20,
		"guard": map[string]any{"metric": "failure_rate", "max_degradation": 2, "min_samples": 200, "confidence": 0.95, "action": "rollback"}}).json(t, &rel)

	// A conversation pinned to the candidate before the guard decides.
	var pinned struct {
		SessionID     string `json:"session_id"`
		PinnedVersion int    `json:"pinned_version"`
	}
	for u := 0; pinned.PinnedVersion != 2; u++ {
		must(t, 201, "POST", a+"/v1/sessions", runtimeToken, map[string]any{"agent": "shop", "env": "prod", "user_id": fmt.Sprint("pinned-", u)}).json(t, &pinned)
	}

	type sample struct {
		sent, got time.Time
		version   int
		err       error
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var mu sync.Mutex
	var samples []sample
	reported := 0
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rt := promptclient.New(c.nodes[w%len(c.nodes)].URL, runtimeToken)
			r := rand.New(rand.NewPCG(uint64(w), 16))
			var batch []promptclient.Outcome
			for ctx.Err() == nil {
				user := fmt.Sprint("user-", r.IntN(5000))
				s := sample{sent: time.Now()}
				p, err := rt.Resolve(ctx, "shop", "prod", promptclient.Caller{UserID: user})
				s.got = time.Now()
				if err != nil {
					if ctx.Err() == nil {
						mu.Lock()
						samples = append(samples, sample{sent: s.sent, got: s.got, err: err})
						mu.Unlock()
					}
					continue
				}
				s.version = p.Version
				mu.Lock()
				samples = append(samples, s)
				mu.Unlock()
				if p.Release == nil {
					continue // the release is over
				}
				fail := 0.05
				if p.Release.Arm == "candidate" {
					fail = 0.15
				}
				batch = append(batch, promptclient.Outcome{Agent: "shop", Env: "prod", ReleaseID: p.Release.ID, Arm: p.Release.Arm,
					Version: p.Version, Reason: "bucket", Success: r.Float64() >= fail, At: time.Now()})
				if len(batch) == 50 {
					if _, err := rt.ReportOutcomes(ctx, batch); err != nil && ctx.Err() == nil {
						t.Errorf("ReportOutcomes: %v", err)
					}
					mu.Lock()
					reported += len(batch)
					mu.Unlock()
					batch = batch[:0]
				}
			}
		}()
	}

	// Wait for the guard (nobody else touches the release).
	admin := promptclient.New(a, adminToken)
	var got *promptclient.Release
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r, err := admin.GetRelease(t.Context(), rel.ID)
		if err != nil {
			t.Fatal(err)
		}
		if r.State != promptclient.StateRunning {
			got = r
			break
		}
		if time.Now().After(deadline) {
			cancel()
			wg.Wait()
			t.Fatalf("the guard did not decide in 2 min: %+v stats %+v (%d outcomes reported)", r.Guard, r.Stats, reported)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(3500 * time.Millisecond) // the runtimes keep resolving past the bound
	cancel()
	wg.Wait()

	if got.State != promptclient.StateRolledBack || got.Guard == nil || got.Guard.State != promptclient.GuardTripped || got.Guard.DecidedAt == nil {
		t.Fatalf("release after the guard: state %s guard %+v", got.State, got.Guard)
	}
	if last := got.History[len(got.History)-1]; last.Actor != "guard" || last.Action != "rollback" {
		t.Fatalf("last transition %+v: want a rollback by the guard", last)
	}
	decided := got.Guard.DecidedAt.Time()
	var stale time.Duration
	var errs, served int
	for _, s := range samples {
		switch {
		case s.err != nil:
			errs++
			t.Errorf("resolve failed: %v", s.err)
		case s.version == 2 && s.sent.After(decided):
			stale = max(stale, s.got.Sub(decided))
		case s.sent.After(decided):
			served++
		}
	}
	st := got.Stats
	t.Logf("guard tripped after %d bucket outcomes reported: baseline n=%d rate %.2f%% %v, candidate n=%d rate %.2f%% %v, degradation %+v; reason %q",
		reported, st.Baseline.N, st.Baseline.Rate, st.Baseline.Interval, st.Candidate.N, st.Candidate.Rate, st.Candidate.Interval, *st.Difference, got.Guard.Reason)
	t.Logf("after the decision: the candidate was served for %v more (propagation target p99 < 200 ms: %s; bound 3 s); %d baseline answers after it, %d failed requests",
		stale.Round(time.Microsecond), metOrMissed(stale < 200*time.Millisecond), served, errs)
	if stale > 3*time.Second {
		t.Errorf("the candidate was served %v after the guard's rollback (bound 3 s)", stale)
	}
	if st.Candidate.N < 200 || st.Baseline.N < 200 || st.Difference == nil || st.Difference.Lower <= 2 {
		t.Fatalf("figures at the decision %+v: want both arms at min_samples and the lower bound above 2 points", st)
	}
	for _, node := range c.nodes {
		for u := range 200 {
			if p, code, err := resolve(node.URL, "shop", "prod", fmt.Sprint("user-", u)); err != nil || code != 200 || p.Version != 1 {
				t.Fatalf("%s user-%d after the rollback: version %d (%d, %v)", node.URL, u, p.Version, code, err)
			}
		}
	}

	// The conversation on the candidate is re-pinned to the baseline at its
	// next resolution, as after a person's rollback.
	var sp struct {
		Version      int  `json:"version"`
		Pinned       bool `json:"pinned"`
		RepinnedFrom *int `json:"repinned_from"`
	}
	must(t, 200, "GET", a+"/v1/agents/shop/envs/prod/prompt?session_id="+pinned.SessionID, runtimeToken, nil).json(t, &sp)
	if sp.Version != 1 || !sp.Pinned || sp.RepinnedFrom == nil || *sp.RepinnedFrom != 2 {
		t.Fatalf("the session pinned to the candidate after the rollback: %+v", sp)
	}

	// The audit has the decision with both arms' figures ...
	var audit struct {
		Items []struct {
			Actor   string
			Details struct {
				Baseline, Candidate struct {
					N    int64
					Rate float64
				}
				Difference struct{ Lower float64 }
				Action     string
			}
		}
	}
	must(t, 200, "GET", a+"/v1/audit?action=release.guard_tripped&agent=shop", adminToken, nil).json(t, &audit)
	// The audit holds the figures the guard decided on; the release's
	// stats, read after it, also count the outcomes runtimes reported
	// while the rollback reached them (inside the run window's skew), so
	// they are at least as large.
	if len(audit.Items) != 1 || audit.Items[0].Actor != "guard" || audit.Items[0].Details.Action != "rollback" {
		t.Fatalf("audit release.guard_tripped: %+v", audit.Items)
	}
	if d := audit.Items[0].Details; d.Candidate.N < 200 || d.Baseline.N < 200 || d.Candidate.N > st.Candidate.N ||
		d.Baseline.N > st.Baseline.N || d.Difference.Lower <= 2 {
		t.Fatalf("audit release.guard_tripped figures %+v: want both arms at min_samples (200), at most the release's %+v, lower bound above 2", d, st)
	}
	// ... and so does the webhook's delivery of it.
	deadline = time.Now().Add(30 * time.Second)
	for {
		var found bool
		for _, at := range hook.Attempts() {
			var d struct {
				Type string
				Data struct {
					Action  string
					Details struct {
						Baseline, Candidate struct{ N int64 }
						Difference          struct{ Lower float64 }
					}
				}
			}
			if json.Unmarshal(at.Body, &d) == nil && d.Data.Action == "release.guard_tripped" {
				dec := audit.Items[0].Details // the webhook carries the audit event's figures
				if d.Data.Details.Candidate.N != dec.Candidate.N || d.Data.Details.Baseline.N != dec.Baseline.N || d.Data.Details.Difference.Lower <= 2 {
					t.Fatalf("webhook delivery of release.guard_tripped: %s", at.Body)
				}
				found = true
			}
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no webhook delivery of release.guard_tripped in 30 s (%d attempts)", len(hook.Attempts()))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
