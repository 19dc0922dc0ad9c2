package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/promptd/promptd/api/client"
)

func TestBoards_createClaimRunDone_andTheErrorsOfTheWriteRule(t *testing.T) {
	s := startPromptd(t)
	ctx := context.Background()
	if _, err := s.rt.GetRecord(ctx, "tasks", "x"); !errors.Is(err, client.ErrBoardNotFound) {
		t.Fatalf("get on an undefined board: %v", err)
	}
	low, created, err := s.rt.CreateRecord(ctx, "tasks", client.NewRecord{ID: "low", Payload: map[string]int{"n": 1}, Priority: 1, DedupeKey: "k-low"})
	if err != nil || !created || low.State != "pending" || low.Revision != 1 || string(low.Payload) != `{"n":1}` {
		t.Fatalf("create = %+v, %v, %v", low, created, err)
	}
	again, created, err := s.rt.CreateRecord(ctx, "tasks", client.NewRecord{Payload: 2, DedupeKey: "k-low"})
	if err != nil || created || again.ID != "low" {
		t.Fatalf("create with the same dedupe_key = %+v, %v, %v; want the first record", again, created, err)
	}
	if _, _, err := s.rt.CreateRecord(ctx, "tasks", client.NewRecord{ID: "high", Payload: json.RawMessage(`"h"`), Priority: 9}); err != nil {
		t.Fatal(err)
	}
	items, next, err := s.rt.ListRecords(ctx, "tasks", client.ListRecordsOptions{State: "pending"})
	if err != nil || len(items) != 2 || items[0].ID != "high" || next != "" {
		t.Fatalf("list = %+v, %q, %v", items, next, err)
	}
	cl, err := s.rt.ClaimNext(ctx, "tasks", client.ClaimRequest{Holder: "w1", TTL: 5 * time.Second})
	if err != nil || cl == nil || cl.Record.ID != "high" || cl.Fence != 1 || owner(cl.Record) != "w1" || cl.Record.ClaimExpiresAt == nil {
		t.Fatalf("claim = %+v, %v", cl, err)
	}
	_, err = s.rt.UpdateRecord(ctx, "tasks", "high", client.RecordUpdate{ExpectedRevision: cl.Record.Revision, State: "running"})
	var e *client.Error
	if !errors.Is(err, client.ErrClaimed) || !errors.As(err, &e) || e.Holder() != "" && e.Holder() != "w1" {
		t.Fatalf("unfenced write to a claimed record: %v", err)
	}
	if _, err := s.rt.UpdateRecord(ctx, "tasks", "high", client.RecordUpdate{ExpectedRevision: cl.Record.Revision, State: "running", Fence: 7}); !errors.Is(err, client.ErrStaleFence) ||
		!errors.As(err, &e) || e.CurrentFence() != 1 {
		t.Fatalf("write with another fence: %v", err)
	}
	hb, err := s.rt.HeartbeatRecord(ctx, "tasks", "high", cl.Fence, 10*time.Second)
	if err != nil || hb.Revision != cl.Record.Revision || hb.ClaimTTLMs != 10000 || !hb.ClaimExpiresAt.Time().After(cl.Record.ClaimExpiresAt.Time()) {
		t.Fatalf("heartbeat = %+v, %v", hb, err)
	}
	run, err := s.rt.UpdateRecord(ctx, "tasks", "high", client.RecordUpdate{ExpectedRevision: cl.Record.Revision, State: "running", Fence: cl.Fence})
	if err != nil || run.State != "running" || owner(*run) != "w1" {
		t.Fatalf("running = %+v, %v", run, err)
	}
	done, err := s.rt.UpdateRecord(ctx, "tasks", "high", client.RecordUpdate{ExpectedRevision: run.Revision, State: "done", Payload: "result", Fence: cl.Fence})
	if err != nil || done.State != "done" || done.Owner != nil || string(done.Payload) != `"result"` {
		t.Fatalf("done = %+v, %v", done, err)
	}
	cl2, err := s.rt.ClaimRecord(ctx, "tasks", "low", client.ClaimRequest{Holder: "w2"})
	if err != nil || cl2 == nil {
		t.Fatalf("claim one = %+v, %v", cl2, err)
	}
	r, err := s.rt.ReleaseRecord(ctx, "tasks", "low", cl2.Fence)
	if err != nil || r.State != "pending" || r.Owner != nil || r.Fence != cl2.Fence+1 {
		t.Fatalf("release = %+v, %v", r, err)
	}
	if _, err := s.rt.ClaimRecord(ctx, "tasks", "high", client.ClaimRequest{Holder: "w2"}); !errors.Is(err, client.ErrInvalidTransition) {
		t.Fatalf("claim of a done record: %v", err)
	}
	b, err := s.rt.GetBoard(ctx, "tasks")
	if err != nil || b.Revision != 1 || b.Claim.From != "pending" || b.Claim.TTLMs != 30000 || b.CreatedBy == "" {
		t.Fatalf("board = %+v, %v", b, err)
	}
	if err := s.rt.DeleteBoard(ctx, "tasks"); !errors.Is(err, client.Code("board_in_use")) { // low is pending
		t.Fatalf("delete a board with a pending record: %v", err)
	}
	if _, err := s.rt.UpdateRecord(ctx, "tasks", "low", client.RecordUpdate{ExpectedRevision: r.Revision, State: "cancelled"}); err != nil {
		t.Fatal(err)
	}
	if err := s.rt.DeleteBoard(ctx, "tasks"); err != nil {
		t.Fatalf("delete a board whose records are terminal: %v", err)
	}
	if _, err := s.rt.GetBoard(ctx, "tasks"); err == nil {
		t.Fatal("the deleted board is still there")
	}
}

func TestClaimNext_whenNothingComesWithinWait_isNil(t *testing.T) {
	s := startPromptd(t)
	ctx := context.Background()
	def := client.BoardDefinition{States: []string{"pending", "claimed", "done", "failed"}, Initial: "pending",
		Transitions: map[string][]string{"pending": {"claimed"}, "claimed": {"done", "pending"}},
		Claim:       client.ClaimRule{From: "pending", To: "claimed", TTLMs: 1000, ReclaimTo: "pending", MaxAttempts: 3, Exhausted: "failed"},
		Terminal:    []string{"done", "failed"}}
	if b, err := s.admin.PutBoard(ctx, "empty", def, 0); err != nil || b.Revision != 1 {
		t.Fatalf("put board = %+v, %v", b, err)
	}
	cl, err := s.rt.ClaimNext(ctx, "empty", client.ClaimRequest{Holder: "w", Wait: 200 * time.Millisecond})
	if cl != nil || err != nil {
		t.Fatalf("claim on an empty board = %+v, %v; want nil, nil", cl, err)
	}
}

// A claim of 1.5 s held for 4 s: the heartbeats (every 500 ms) keep it,
// and the holder's write at the end is accepted.
func TestHoldClaim_heartbeatsAtAThirdOfTheTTL_keepTheClaimPastItsTTL(t *testing.T) {
	s := startPromptd(t)
	ctx := context.Background()
	if _, _, err := s.rt.CreateRecord(ctx, "hold", client.NewRecord{ID: "a", Payload: 1}); err != nil {
		t.Fatal(err)
	}
	h, err := s.rt.ClaimAndHold(ctx, "hold", client.ClaimRequest{Holder: "w", TTL: 1500 * time.Millisecond})
	if err != nil || h == nil {
		t.Fatalf("claim and hold = %v, %v", h, err)
	}
	select {
	case <-h.Done():
		t.Fatalf("claim lost while held: %v", h.Err())
	case <-time.After(4 * time.Second):
	}
	if _, err := h.Update(ctx, "running", nil); err != nil {
		t.Fatalf("write under the held claim after 4 s: %v", err)
	}
	r, err := h.Update(ctx, "done", "ok")
	if err != nil || r.State != "done" {
		t.Fatalf("done = %+v, %v", r, err)
	}
	if !errors.Is(h.Err(), client.ErrClaimEnded) {
		t.Fatalf("after done the claim's context ended with %v, want ErrClaimEnded", h.Err())
	}
}

// The claim is released behind the holder's back (another process with
// its fence) and taken by another: the holder's next heartbeat is refused
// and its context ends with stale_fence, within the TTL.
func TestHoldClaim_whenTheClaimIsTakenByAnother_endsItsContextWithStaleFence(t *testing.T) {
	s := startPromptd(t)
	ctx := context.Background()
	if _, _, err := s.rt.CreateRecord(ctx, "lost", client.NewRecord{ID: "a", Payload: 1}); err != nil {
		t.Fatal(err)
	}
	h, err := s.rt.ClaimAndHold(ctx, "lost", client.ClaimRequest{Holder: "w1", TTL: 3 * time.Second})
	if err != nil || h == nil {
		t.Fatalf("claim and hold = %v, %v", h, err)
	}
	defer h.Stop()
	if _, err := s.rt.ReleaseRecord(ctx, "lost", "a", h.Fence()); err != nil {
		t.Fatal(err)
	}
	if cl, err := s.rt.ClaimNext(ctx, "lost", client.ClaimRequest{Holder: "w2"}); err != nil || cl == nil {
		t.Fatalf("second claim = %+v, %v", cl, err)
	}
	select {
	case <-h.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the holder's context did not end after its claim was taken")
	}
	if !errors.Is(h.Err(), client.ErrStaleFence) {
		t.Fatalf("cause = %v, want stale_fence", h.Err())
	}
	if _, err := h.Update(ctx, "done", "late"); !errors.Is(err, client.ErrStaleFence) {
		t.Fatalf("the old holder's late write = %v, want stale_fence", err)
	}
}

// Three loops over 30 records, one of which fails its first attempt: every
// record ends done, the failed one on its second claim.
func TestClaimLoop_threeLoops_completeEveryRecord_andReleaseOnError(t *testing.T) {
	s := startPromptd(t)
	ctx := context.Background()
	const n = 30
	for i := 0; i < n; i++ {
		if _, _, err := s.rt.CreateRecord(ctx, "loop", client.NewRecord{ID: fmt.Sprint("r", i), Payload: i}); err != nil {
			t.Fatal(err)
		}
	}
	lctx, stop := context.WithCancel(ctx)
	var (
		mu     sync.Mutex
		worked = map[string]int{}
		failed bool
		wg     sync.WaitGroup
		errs   = make(chan error, 3)
	)
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.rt.ClaimLoop(lctx, "loop", client.ClaimRequest{Holder: fmt.Sprint("w", w), TTL: 2 * time.Second, Wait: 300 * time.Millisecond},
				func(ctx context.Context, h *client.HeldClaim) error {
					id := h.Record().ID
					mu.Lock()
					worked[id]++
					fail := id == "r7" && !failed
					failed = failed || fail
					mu.Unlock()
					if fail {
						return errors.New("first attempt fails")
					}
					if _, err := h.Update(ctx, "running", nil); err != nil {
						return err
					}
					_, err := h.Update(ctx, "done", map[string]string{"by": fmt.Sprint("w", w)})
					return err
				})
		}()
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		items, _, err := s.rt.ListRecords(ctx, "loop", client.ListRecordsOptions{State: "done", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(items) == n {
			break
		}
		if time.Now().After(deadline) {
			stop()
			wg.Wait()
			t.Fatalf("%d of %d records done after 20 s; loops: %v %v %v", len(items), n, <-errs, <-errs, <-errs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	wg.Wait()
	for w := 0; w < 3; w++ {
		if err := <-errs; err != nil {
			t.Errorf("loop: %v", err)
		}
	}
	for i := 0; i < n; i++ {
		id, want := fmt.Sprint("r", i), 1
		if id == "r7" {
			want = 2
		}
		if worked[id] != want {
			t.Errorf("%s worked on %d times, want %d", id, worked[id], want)
		}
	}
}

// An answer a retry cannot fix ends the loop with it; an unreachable
// promptd does not (the loop tries again until its context ends).
func TestClaimLoop_endsOnBoardNotFound_butOutlivesAnUnreachableServer(t *testing.T) {
	s := startPromptd(t)
	work := func(context.Context, *client.HeldClaim) error { t.Error("work ran"); return nil }
	err := s.rt.ClaimLoop(context.Background(), "no-such-board", client.ClaimRequest{Holder: "w"}, work)
	if !errors.Is(err, client.ErrBoardNotFound) {
		t.Fatalf("loop on an undefined board = %v, want board_not_found", err)
	}
	down := client.New("http://127.0.0.1:1", runtimeSecret, client.WithRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	if err := down.ClaimLoop(ctx, "tasks", client.ClaimRequest{Holder: "w"}, work); err != nil {
		t.Fatalf("loop against an unreachable promptd = %v, want nil when its context ends", err)
	}
}

// owner is the record's claim holder, "" when it has none.
func owner(r client.Record) string {
	if r.Owner == nil {
		return ""
	}
	return *r.Owner
}
