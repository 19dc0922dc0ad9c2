package client_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/promptd/promptd/api/client"
)

// A config's content hash, as promptd computes it: key order and
// whitespace do not matter, numbers count as written.
func ExampleContentHash() {
	a, _ := client.ContentHash([]byte(`{"system": "Hi", "model": {"temperature": 0.2}}`))
	b, _ := client.ContentHash([]byte(`{"model":{"temperature":0.2},"system":"Hi"}`))
	c, _ := client.ContentHash([]byte(`{"model":{"temperature":0.20},"system":"Hi"}`))
	fmt.Println(a == b, a == c)
	fmt.Println(a)
	// Output:
	// true false
	// sha256:7461c3d371cbea21d50e38b11ca51de4128d8c517805758f8adf24c900607dab
}

// Publishing from a base version: a conflict names the latest version.
func ExampleClient_CreateVersion() {
	c := client.New("http://127.0.0.1:8080", "admin-token")
	_, err := c.CreateVersion(context.Background(), "support", client.CreateVersionRequest{
		BaseVersion: 3, Config: client.PromptConfig{System: "You are helpful."}})
	var e *client.Error
	if errors.Is(err, client.ErrVersionConflict) && errors.As(err, &e) {
		fmt.Printf("someone published version %d: rebase on it\n", e.LatestVersion())
	}
}

// A runtime: prompts from an in-process cache (revalidated every 5 s,
// the last good prompt served through an outage, never a revoked
// version), and session writes under a lease whose loss stops the work.
func Example_runtime() {
	ctx := context.Background()
	c := client.New("http://127.0.0.1:8080", "runtime-token")
	prompts := c.NewPromptCache()

	p, err := prompts.Get(ctx, "support", "prod", "user-42", "")
	if err != nil {
		return // promptd refused, or was never reached
	}
	fmt.Println("serving version", p.Version)

	sess, err := c.CreateSession(ctx, client.CreateSessionRequest{Agent: "support", Env: "prod", UserID: "user-42"})
	if err != nil {
		return
	}
	held, err := c.HoldLease(ctx, sess.SessionID, "worker-1", 5*time.Second)
	if err != nil {
		return // errors.Is(err, client.ErrLeaseHeld): another worker has it
	}
	defer held.Release(context.Background())
	// held.Context() ends if the lease is lost; the fence in the condition
	// makes a late write fail with client.ErrStaleFence.
	_, err = c.AppendTurns(held.Context(), sess.SessionID, held.Condition(sess.Revision),
		client.TextTurn("user", "Where is my order?"))
	if err != nil {
		return
	}
}

// A board worker: claims records one after another, works on each under
// a claim kept alive by heartbeats (its context ends if the claim is
// lost), and writes the result with the claim's fence; a failed record
// goes back to the board for another worker.
func ExampleClient_ClaimLoop() {
	ctx, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	c := client.New("http://127.0.0.1:8080", "runtime-token")
	err := c.ClaimLoop(ctx, "tasks", client.ClaimRequest{Holder: "worker-1", Wait: 10 * time.Second},
		func(ctx context.Context, h *client.HeldClaim) error {
			if _, err := h.Update(ctx, "running", nil); err != nil {
				return err
			}
			result := map[string]any{"summary": "done by worker-1", "input": h.Record().Payload}
			_, err := h.Update(ctx, "done", result) // stale_fence if the claim was lost meanwhile
			return err
		})
	if err != nil {
		fmt.Println("worker stopped:", err)
	}
}

// An importer writes its rows under an intent: registered first, so that
// another agent about to touch the same records is told who holds them;
// the batch is all or nothing, carries the intent's fence (checked in the
// batch's own transaction) and the fingerprint the importer computed, so
// the proof that comes back is of this batch.
func ExampleClient_ApplyBatch() {
	ctx := context.Background()
	c := client.New("http://127.0.0.1:8080", "runtime-token")
	in, err := c.RegisterIntent(ctx, client.IntentInput{Holder: "importer-1", TTL: 2 * time.Minute, Description: "nightly EU import",
		Scope: client.IntentScope{Records: []client.IntentRecordScope{{Board: "crm", Prefixes: []string{"eu-"}}}}})
	var e *client.Error
	if errors.Is(err, client.ErrIntentConflict) && errors.As(err, &e) {
		for _, other := range e.IntentConflicts() {
			fmt.Printf("%s holds %s until %s: try later\n", other.Holder, other.ID, other.ExpiresAt)
		}
		return
	} else if err != nil {
		return
	}
	defer c.ReleaseIntent(context.Background(), in.ID, in.Fence) // a fresh context: ctx may be done

	batch := client.BatchInput{Mode: client.BatchAllOrNothing, Intent: &client.IntentRef{ID: in.ID, Fence: in.Fence},
		Items: []client.BatchItem{
			{Op: client.BatchCreate, ID: "eu-1", Payload: map[string]string{"name": "Ada"}},
			{Op: client.BatchUpdate, ID: "eu-2", ExpectedRevision: 4, Payload: map[string]string{"city": "Lyon"}, Merge: true},
		}}
	if batch.BatchFingerprint, err = batch.Fingerprint(); err != nil {
		return
	}
	b, err := c.ApplyBatch(ctx, "crm", batch)
	switch {
	case errors.Is(err, client.ErrBatchRejected) && errors.As(err, &e):
		for _, r := range e.BatchRejection().Results {
			if r.Conflict != nil {
				fmt.Printf("item %d (%s): %s\n", r.Index, r.ID, r.Conflict.Code)
				for _, p := range client.MergePathsOf(r.Conflict) {
					fmt.Printf("  both changed %s\n", p)
				}
			}
		}
	case errors.Is(err, client.ErrStaleFence):
		fmt.Println("the intent expired before the batch: nothing was written")
	case err == nil:
		for _, r := range b.Results {
			fmt.Printf("%s: %s, revision %d -> %d, %s\n", r.ID, r.Status, r.RevisionBefore, r.RevisionAfter, r.ContentHash)
		}
	}
}
