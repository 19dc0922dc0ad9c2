package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promptd/promptd/webhook"
	"github.com/promptd/promptd/webhook/webhooktest"
)

// The retention run's timing. The retention outlasts a lease takeover
// (the sequencer's and the dispatcher's 5 s) with room to spare, so only
// the paused readers fall behind it; their pause outlasts the retention
// plus the 10 s for which an instance keeps its oldest position.
const (
	retRetention = 10 * time.Second
	retRound     = 45 * time.Second // writes per round (PROMPTD_FAULT_ROUNDS rounds)
	retPauseAt   = 5 * time.Second  // into a round, the paused readers stop reading ...
	retPauseFor  = 26 * time.Second // ... for this long
	retKillAt    = 12 * time.Second // into a round, node 0 is killed (-9) and restarted
)

type retReader struct {
	name        string
	sse, paused bool
	mu          sync.Mutex
	log         []retEntry
	cursor      int64
	conns       int
}

func (r *retReader) pos() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cursor
}

func (r *retReader) add(e retEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, e)
	if e.expired && e.oldest >= 0 {
		r.cursor = e.oldest
	} else if e.seq > r.cursor {
		r.cursor = e.seq
	}
}

// fivexx records the 5xx answers a run got, with when, and the answers
// no request of the run should get at any time (odd).
type fivexx struct {
	mu  sync.Mutex
	ats []time.Time
	ex  []string
	odd []string
}

// add records a 5xx answer; any other status but the expected is odd.
func (f *fivexx) add(status int, what string, expected ...int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case status >= 500:
		f.ats = append(f.ats, time.Now())
		f.ex = append(f.ex, fmt.Sprintf("%d %s", status, what))
	case !slices.Contains(expected, status):
		f.odd = append(f.odd, fmt.Sprintf("%d %s", status, what))
	}
}

// TestFaultsRetention: three promptd nodes prune the change feed's tail
// every second (10 s retention) while writers create versions and switch
// a pointer on random nodes, readers follow GET /v1/events (SSE and
// long-poll) on random nodes, reconnecting from their cursor, two readers
// pause past the retention, a webhook delivers every event to a local
// receiver, and node 0 (which leads the sequencer, the dispatcher and the
// retention job when it started first) is killed (-9) and restarted in
// each round. After it, an explicit model check of what each saw:
// positions name one event each; every reader that got no 410 got every
// position from its start to the head once, in order; the paused readers
// got 410 cursor_expired with oldest at or past the pruned mark and went
// on exactly after it, never a silent skip; every acknowledged version
// is in the feed; the receiver got every position after the webhook's
// creation; no 5xx outside the kill windows.
func TestFaultsRetention(t *testing.T) {
	began := time.Now()
	rounds := faultRounds(t)
	hook := webhooktest.NewReceiver(t)
	c := startFaultClusterWith(t, map[string]string{
		"PROMPTD_AUDIT_RETENTION": retRetention.String(), "PROMPTD_EVENT_RETENTION": retRetention.String(),
		"PROMPTD_AUDIT_PRUNE_EVERY": "1s", "PROMPTD_SECRET_KEY": webhook.NewKey(),
		"PROMPTD_WEBHOOK_ALLOW_HTTP": "true", "PROMPTD_WEBHOOK_ALLOW_PRIVATE": "true"})
	db, err := sql.Open("mysql", c.db.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	marks := func() (head, pruned int64) {
		_ = db.QueryRow(`SELECT head, pruned_through FROM audit_feed WHERE id = 1`).Scan(&head, &pruned)
		return head, pruned
	}
	a := c.nodes[0].URL
	const writers = 3
	for w := range writers {
		must(t, 201, "POST", fmt.Sprintf("%s/v1/agents/ret-%d/versions", a, w), adminToken,
			map[string]any{"base_version": 0, "config": map[string]any{"system": "seed"}})
	}
	must(t, 201, "PUT", a+"/v1/agents/ret-0/envs/prod", adminToken, map[string]any{"version": 1, "expected_revision": 0})
	var hookResp struct{ ID string }
	must(t, 201, "POST", a+"/v1/webhooks", adminToken, map[string]any{"url": hook.URL(), "actions": []string{"*"}}).json(t, &hookResp)
	var afterSeq int64
	if err := db.QueryRow(`SELECT after_seq FROM webhooks WHERE id = ?`, hookResp.ID).Scan(&afterSeq); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	stop := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bad := &fivexx{}
	node := func() string { return c.nodes[rand.IntN(len(c.nodes))].URL }
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}

	// Writers: version creates on their own agent, and one pointer switcher.
	var acked sync.Map // resource of an acknowledged version -> true
	var ackedN, switches atomic.Int64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			agent := fmt.Sprint("ret-", w)
			base := 1
			for i := 0; !stopped(); i++ {
				r, err := call("POST", node()+"/v1/agents/"+agent+"/versions", adminToken, map[string]any{
					"base_version": base, "config": map[string]any{"system": fmt.Sprint(agent, " ", i)}})
				switch {
				case err == nil && r.Status == 201:
					var v struct{ Version int }
					r.json(t, &v)
					acked.Store(fmt.Sprintf("agents/%s/versions/%d", agent, v.Version), true)
					ackedN.Add(1)
					base = v.Version
				case err == nil:
					bad.add(r.Status, "POST versions: "+string(r.Body), 409)
					fallthrough
				default: // unknown outcome, or a conflict after one: read the latest
					var l struct{ Items []struct{ Version int } }
					if lr, err := call("GET", node()+"/v1/agents/"+agent+"/versions?limit=1", adminToken, nil); err == nil && lr.Status == 200 {
						_ = json.Unmarshal(lr.Body, &l)
						if len(l.Items) > 0 {
							base = l.Items[0].Version
						}
					}
					time.Sleep(50 * time.Millisecond)
				}
				time.Sleep(30 * time.Millisecond)
			}
		})
	}
	wg.Go(func() {
		for i := 0; !stopped(); i++ {
			var e struct{ Version, Revision int64 }
			r, err := call("GET", node()+"/v1/agents/ret-0/envs/prod", adminToken, nil)
			if err != nil || r.Status != 200 {
				if err == nil {
					bad.add(r.Status, "GET env: "+string(r.Body))
				}
				time.Sleep(50 * time.Millisecond)
				continue
			}
			r.json(t, &e)
			r, err = call("PUT", node()+"/v1/agents/ret-0/envs/prod", adminToken,
				map[string]any{"version": 1 + i%2, "expected_revision": e.Revision})
			if err == nil {
				bad.add(r.Status, "PUT env: "+string(r.Body), 200, 409)
				if r.Status == 200 {
					switches.Add(1)
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	// Readers: two SSE and two long-poll followers, and one of each that
	// pauses past the retention once a round.
	readers := []*retReader{
		{name: "sse-0", sse: true}, {name: "sse-1", sse: true}, {name: "poll-0"}, {name: "poll-1"},
		{name: "paused-sse", sse: true, paused: true}, {name: "paused-poll", paused: true},
	}
	var rwg sync.WaitGroup
	for _, r := range readers {
		r.cursor = afterSeq
		rwg.Go(func() {
			for ctx.Err() == nil {
				if r.paused {
					in := time.Since(start) % retRound
					if in >= retPauseAt && in < retPauseAt+retPauseFor && time.Since(start) < time.Duration(rounds)*retRound {
						time.Sleep(retPauseAt + retPauseFor - in)
						continue
					}
				}
				_, pruned := marks()
				if r.sse {
					retSSE(ctx, r, node(), pruned, bad)
				} else {
					retPoll(r, node(), pruned, bad)
				}
			}
		})
	}

	// Rounds: node 0 killed and restarted in each.
	type window struct{ from, to time.Time }
	var kills []window
	for round := range rounds {
		time.Sleep(time.Until(start.Add(time.Duration(round)*retRound + retKillAt)))
		w := window{from: time.Now()}
		c.nodes[0].Kill()
		time.Sleep(time.Second)
		c.nodes[0].Restart()
		w.to = time.Now().Add(2 * time.Second)
		kills = append(kills, w)
		time.Sleep(time.Until(start.Add(time.Duration(round+1) * retRound)))
	}
	close(stop)
	wg.Wait()

	// The head once every committed event is stamped and it stays put.
	var final int64
	for deadline := time.Now().Add(60 * time.Second); ; {
		var unstamped int64
		_ = db.QueryRow(`SELECT COUNT(*) FROM audit_events WHERE seq IS NULL`).Scan(&unstamped)
		h, _ := marks()
		if unstamped == 0 && h == final && h > 0 {
			break
		}
		final = h
		if time.Now().After(deadline) {
			t.Fatalf("the feed did not settle within 60 s: head %d, %d unstamped", h, unstamped)
		}
		time.Sleep(time.Second)
	}
	_, prunedFinal := marks()
	hookIDs := func() map[string][]byte {
		out := map[string][]byte{}
		for _, at := range hook.Attempts() {
			if at.Status < 300 {
				out[at.ID] = at.Body
			}
		}
		return out
	}
	for deadline := time.Now().Add(60 * time.Second); ; {
		done := int64(len(hookIDs())) >= final-afterSeq
		for _, r := range readers {
			done = done && r.pos() >= final
		}
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	cancel()
	rwg.Wait()

	// The model check.
	var fails []string
	fail := func(f string, args ...any) {
		if len(fails) < 40 {
			fails = append(fails, fmt.Sprintf(f, args...))
		}
	}
	idAt, seqOf := map[int64]int64{}, map[int64]int64{}
	resources := map[string]bool{}
	see := func(who string, seq, id int64) {
		if prev, ok := idAt[seq]; ok && prev != id {
			fail("%s: position %d names event %d, another saw %d there", who, seq, id, prev)
		}
		if prev, ok := seqOf[id]; ok && prev != seq {
			fail("%s: event %d at position %d, another saw it at %d", who, id, seq, prev)
		}
		idAt[seq], seqOf[id] = id, seq
	}
	expired := 0
	for _, r := range readers {
		for _, e := range r.log {
			if e.expired {
				t.Logf("%s: 410 cursor_expired at %d, oldest %d (pruned through %d before the request)", r.name, e.at, e.oldest, e.pruned)
			}
		}
		n := checkFeedLog(r.name, r.log, afterSeq, final, r.paused, func(seq, id int64, action, resource string) {
			see(r.name, seq, id)
			if action == "version.created" {
				resources[resource] = true
			}
		}, fail)
		if r.paused && n < rounds {
			fail("%s: %d 410s in %d rounds of pauses past the retention", r.name, n, rounds)
		}
		expired += n
	}
	acked.Range(func(k, _ any) bool {
		if !resources[k.(string)] {
			fail("acknowledged %s is not in the feed", k)
		}
		return true
	})
	got := hookIDs()
	for s := afterSeq + 1; s <= final; s++ {
		id := "msg_" + strconv.FormatInt(s, 10) + "_" + hookResp.ID
		body, ok := got[id]
		if !ok {
			fail("webhook: position %d (%s) not delivered", s, id)
			continue
		}
		var m struct{ Data struct{ Seq, ID int64 } }
		if err := json.Unmarshal(body, &m); err != nil || m.Data.Seq != s {
			fail("webhook: %s carries %s", id, body)
			continue
		}
		see("webhook", m.Data.Seq, m.Data.ID)
	}
	for s := afterSeq + 1; s <= final; s++ {
		if _, ok := idAt[s]; !ok {
			fail("position %d: no reader and no delivery saw it", s)
		}
	}
	bad.mu.Lock()
	n5xx := 0
	for i, at := range bad.ats {
		during := false
		for _, w := range kills {
			during = during || !at.Before(w.from) && !at.After(w.to)
		}
		if !during {
			n5xx++
			fail("outside the kill window: %s", bad.ex[i])
		}
	}
	for _, o := range bad.odd {
		fail("unexpected answer: %s", o)
	}
	bad.mu.Unlock()

	conns := make([]string, len(readers))
	for i, r := range readers {
		conns[i] = fmt.Sprintf("%s %d", r.name, r.conns)
	}
	table := "| rounds | events checked | acknowledged versions / switches | readers (connections) | restarts | 410s (paused readers) | pruned through | webhook deliveries (distinct / attempts) | 5xx outside kills | model check | runtime |\n" +
		"|---|---|---|---|---|---|---|---|---|---|---|\n" +
		fmt.Sprintf("| %d | %d (positions %d..%d) | %d / %d | %d (%s) | %d | %d | %d | %d / %d | %d | %s | %s |\n",
			rounds, final-afterSeq, afterSeq+1, final, ackedN.Load(), switches.Load(), len(readers), strings.Join(conns, ", "),
			len(kills), expired, prunedFinal, len(got), len(hook.Attempts()), n5xx, okOrFailed(len(fails) == 0),
			time.Since(began).Round(time.Second))
	writeFaultReport(t, "Change feed under retention (MySQL + Redis)", table)
	if prunedFinal <= afterSeq {
		fail("nothing past the webhook's start was pruned (pruned through %d): the run did not test retention", prunedFinal)
	}
	for _, f := range fails {
		t.Error(f)
	}
}

func okOrFailed(ok bool) string {
	if ok {
		return "ok"
	}
	return "failed"
}

// retPoll is one long-poll of r after its cursor on base.
func retPoll(r *retReader, base string, pruned int64, bad *fivexx) {
	at := r.pos()
	r.mu.Lock()
	r.conns++
	r.mu.Unlock()
	res, err := call("GET", fmt.Sprintf("%s/v1/events?since=%d&limit=200&wait_ms=1000", base, at), adminToken, nil)
	if err != nil {
		time.Sleep(50 * time.Millisecond)
		return
	}
	switch res.Status {
	case 200:
		var page struct {
			Items []struct {
				Seq, ID          int64
				Action, Resource string
			}
			Next string
		}
		if err := json.Unmarshal(res.Body, &page); err != nil {
			bad.add(0, "long-poll answer: "+err.Error())
			return
		}
		for _, e := range page.Items {
			r.add(retEntry{seq: e.Seq, id: e.ID, action: e.Action, resource: e.Resource})
		}
		// next is the position scanned: past an event not given, the
		// model check sees the skip at the next page.
		if n, err := strconv.ParseInt(page.Next, 10, 64); err == nil {
			r.mu.Lock()
			r.cursor = max(r.cursor, n)
			r.mu.Unlock()
		}
	case 410:
		r.add(expiredEntry(at, pruned, res.Body))
	default:
		bad.add(res.Status, "long-poll: "+string(res.Body))
		time.Sleep(50 * time.Millisecond)
	}
}

// retSSE follows the SSE stream after r's cursor on base for 0.5..3 s.
func retSSE(ctx context.Context, r *retReader, base string, pruned int64, bad *fivexx) {
	at := r.pos()
	r.mu.Lock()
	r.conns++
	r.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, time.Duration(500+rand.IntN(2500))*time.Millisecond)
	defer cancel()
	err := sseStream(cctx, fmt.Sprintf("%s/v1/events?since=%d", base, at), adminToken, func() {}, func(data []byte) {
		var e struct {
			Seq, ID          int64
			Action, Resource string
		}
		if err := json.Unmarshal(data, &e); err != nil {
			bad.add(0, "SSE event: "+err.Error())
			return
		}
		r.add(retEntry{seq: e.Seq, id: e.ID, action: e.Action, resource: e.Resource})
	})
	var se *statusError
	switch {
	case errors.As(err, &se) && se.Status == 410:
		r.add(expiredEntry(at, pruned, se.Body))
	case errors.As(err, &se):
		bad.add(se.Status, "SSE: "+string(se.Body))
		time.Sleep(50 * time.Millisecond)
	case err != nil && cctx.Err() == nil:
		time.Sleep(50 * time.Millisecond) // the node went away; resume elsewhere
	}
}

// expiredEntry is a 410's entry; its oldest is -1 when the answer is not
// a cursor_expired problem with an oldest position.
func expiredEntry(at, pruned int64, body []byte) retEntry {
	var p struct{ Code, Oldest string }
	_ = json.Unmarshal(body, &p)
	oldest, err := strconv.ParseInt(p.Oldest, 10, 64)
	if err != nil || p.Code != "cursor_expired" {
		oldest = -1
	}
	return retEntry{expired: true, at: at, oldest: oldest, pruned: pruned}
}
