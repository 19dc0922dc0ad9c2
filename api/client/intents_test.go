package client_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/promptd/promptd/api/client"
)

// Two workers register overlapping exclusive intents: the second is
// refused with intent_conflict naming the first (its holder and scope); an
// advisory registration beside an advisory one is registered and told of
// it. Get, renew and the overlap query read what was registered.
func TestRegisterIntent_overlappingAnExclusiveOne_isIntentConflictNamingIt(t *testing.T) {
	s := startPromptd(t)
	ctx := ctxT(t)
	first, err := s.rt.RegisterIntent(ctx, client.IntentInput{Holder: "importer-a", Description: "EU rows", TTL: time.Minute,
		Scope: client.IntentScope{Records: []client.IntentRecordScope{{Board: "crm", Prefixes: []string{"eu-"}}}}})
	if err != nil || first.State != client.IntentActive || first.Mode != client.IntentExclusive || first.Fence < 1 || first.TTLMs != 60000 ||
		len(first.Overlaps) != 0 || first.CreatedBy != "rt" {
		t.Fatalf("register = %+v, %v", first, err)
	}
	_, err = s.rt.RegisterIntent(ctx, client.IntentInput{Holder: "importer-b",
		Scope: client.IntentScope{Records: []client.IntentRecordScope{{Board: "crm", IDs: []string{"eu-7"}}}}})
	e := wantCode(t, err, client.ErrIntentConflict)
	others := e.IntentConflicts()
	if len(others) != 1 || others[0].ID != first.ID || others[0].Holder != "importer-a" || others[0].Scope.Records[0].Prefixes[0] != "eu-" ||
		!others[0].ExpiresAt.Time().Equal(first.ExpiresAt.Time()) {
		t.Fatalf("IntentConflicts = %+v, want the first intent", others)
	}
	// Control: a record the first does not cover is free.
	if _, err := s.rt.RegisterIntent(ctx, client.IntentInput{Holder: "importer-b",
		Scope: client.IntentScope{Records: []client.IntentRecordScope{{Board: "crm", IDs: []string{"us-7"}}}}}); err != nil {
		t.Fatalf("register beside the first: %v", err)
	}

	a, err := s.rt.RegisterIntent(ctx, client.IntentInput{Holder: "reader-1", Mode: client.IntentAdvisory, Scope: client.IntentScope{Agents: []string{"support"}, Envs: []string{"prod"}}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.rt.RegisterIntent(ctx, client.IntentInput{Holder: "reader-2", Mode: client.IntentAdvisory, Scope: client.IntentScope{Agents: []string{"support"}}})
	if err != nil || len(b.Overlaps) != 1 || b.Overlaps[0].ID != a.ID {
		t.Fatalf("advisory beside advisory = %+v, %v; want registered, overlapping %s", b, err, a.ID)
	}
	_, err = s.rt.RegisterIntent(ctx, client.IntentInput{Holder: "writer", Scope: client.IntentScope{Agents: []string{"supp*"}}})
	if others := wantCode(t, err, client.ErrIntentConflict).IntentConflicts(); len(others) != 2 {
		t.Fatalf("exclusive over two advisory ones: conflicts %+v, want both", others)
	}

	got, err := s.rt.GetIntent(ctx, first.ID)
	if err != nil || got.ID != first.ID || got.Fence != first.Fence || got.Description != "EU rows" {
		t.Fatalf("get = %+v, %v", got, err)
	}
	renewed, err := s.rt.RenewIntent(ctx, first.ID, first.Fence, 10*time.Minute)
	if err != nil || renewed.TTLMs != 600000 || !renewed.ExpiresAt.Time().After(first.ExpiresAt.Time()) || renewed.Fence != first.Fence {
		t.Fatalf("renew = %+v, %v", renewed, err)
	}
	_, err = s.rt.RenewIntent(ctx, first.ID, first.Fence+1, 0)
	if e := wantCode(t, err, client.ErrStaleFence); e.IntentID() != first.ID || e.CurrentFence() != first.Fence || e.State() != client.IntentActive {
		t.Fatalf("renew with another fence: intent %q, fence %d, state %q", e.IntentID(), e.CurrentFence(), e.State())
	}
	_, err = s.rt.GetIntent(ctx, "int_nope")
	if e := wantCode(t, err, client.ErrIntentNotFound); !e.NotFound() {
		t.Fatalf("status %d", e.Status)
	}
}

// The overlap query pages like every list: a limit, and the next page's
// cursor until the last.
func TestListIntents_byRecordAndBoard_pagesWithTheCursor(t *testing.T) {
	s := startPromptd(t)
	ctx := ctxT(t)
	want := map[string]bool{}
	for _, holder := range []string{"w1", "w2", "w3"} {
		r, err := s.rt.RegisterIntent(ctx, client.IntentInput{Holder: holder, Mode: client.IntentAdvisory,
			Scope: client.IntentScope{Records: []client.IntentRecordScope{{Board: "docs", Prefixes: []string{holder + "-"}}}}})
		if err != nil {
			t.Fatal(err)
		}
		want[r.ID] = true
	}
	if _, err := s.rt.RegisterIntent(ctx, client.IntentInput{Holder: "elsewhere", Scope: client.IntentScope{Boards: []string{"other"}}}); err != nil {
		t.Fatal(err)
	}
	seen, pages, cursor := map[string]bool{}, 0, ""
	for {
		p, err := s.rt.ListIntents(ctx, client.ListIntentsOptions{Boards: []string{"docs"}, ListOptions: client.ListOptions{Limit: 2, Cursor: cursor}})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, it := range p.Items {
			if !want[it.ID] || seen[it.ID] {
				t.Fatalf("page %d lists %s (%s), not one of docs' intents or twice", pages, it.ID, it.Holder)
			}
			seen[it.ID] = true
		}
		if cursor = p.Next; cursor == "" || pages > 3 {
			break
		}
	}
	if len(seen) != 3 || pages != 2 {
		t.Fatalf("%d pages held %d of 3 intents", pages, len(seen))
	}
	p, err := s.rt.ListIntents(ctx, client.ListIntentsOptions{Records: []string{"docs/w2-9"}})
	if err != nil || len(p.Items) != 1 || p.Items[0].Holder != "w2" {
		t.Fatalf("record docs/w2-9: %+v, %v", p, err)
	}
	p, err = s.rt.ListIntents(ctx, client.ListIntentsOptions{Boards: []string{"docs"}, Holder: "w3"})
	if err != nil || len(p.Items) != 1 || p.Items[0].Holder != "w3" {
		t.Fatalf("holder w3: %+v, %v", p, err)
	}
}

// A batch under an intent answers its commit proof: the fingerprint the
// client computed before sending, per item the revisions before and after
// and the content hash of what was written; GetBatch reads the same proof.
// A stale item rejects an all_or_nothing batch whole (batch_rejected with
// every item's result) and is a conflict in a partial one.
func TestApplyBatch_underAnIntent_answersItsProof_andAStaleItemRejectsItWhole(t *testing.T) {
	s := startPromptd(t)
	ctx := ctxT(t)
	in, err := s.rt.RegisterIntent(ctx, client.IntentInput{Holder: "importer",
		Scope: client.IntentScope{Records: []client.IntentRecordScope{{Board: "crm", Prefixes: []string{"eu-"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	batch := client.BatchInput{Mode: client.BatchAllOrNothing, Intent: &client.IntentRef{ID: in.ID, Fence: in.Fence}, Items: []client.BatchItem{
		{Op: client.BatchCreate, ID: "eu-1", Payload: map[string]any{"name": "Ada", "n": 1.50}},
		{Op: client.BatchCreate, ID: "eu-2", Payload: json.RawMessage(`{"name": "Bob"}`), Priority: 3, DedupeKey: "bob"}}}
	fp, err := batch.Fingerprint()
	if err != nil {
		t.Fatal(err)
	}
	batch.BatchFingerprint = fp
	b, err := s.rt.ApplyBatch(ctx, "crm", batch)
	if err != nil {
		t.Fatalf("batch with the fingerprint computed by the client: %v", err)
	}
	ada, _ := client.ContentHash([]byte(`{"n":1.5,"name":"Ada"}`))
	if b.BatchFingerprint != fp || b.IntentID != in.ID || b.Board != "crm" || b.Summary.Created != 2 || len(b.Results) != 2 ||
		b.Results[0].Status != client.BatchStatusCreated || b.Results[0].RevisionBefore != 0 || b.Results[0].RevisionAfter != 1 ||
		b.Results[0].ContentHash != ada || b.Results[1].ID != "eu-2" {
		t.Fatalf("proof = %+v", b)
	}
	stored, err := s.rt.GetBatch(ctx, "crm", b.ID)
	if err != nil || stored.BatchFingerprint != fp || len(stored.Results) != 2 || stored.Results[0].ContentHash != ada {
		t.Fatalf("stored batch = %+v, %v", stored, err)
	}
	// Another fingerprint than the items' is refused: the server applies
	// only the batch the proof was computed for.
	batch.BatchFingerprint = ada
	wantCode(t, appliedErr(s.rt.ApplyBatch(ctx, "crm", batch)), client.ErrInvalidField)

	stale := client.BatchInput{Mode: client.BatchAllOrNothing, Items: []client.BatchItem{
		{Op: client.BatchCreate, ID: "eu-3", Payload: 3},
		{Op: client.BatchUpdate, ID: "eu-1", ExpectedRevision: 5, Payload: map[string]string{"name": "Ada L."}}}}
	e := wantCode(t, appliedErr(s.rt.ApplyBatch(ctx, "crm", stale)), client.ErrBatchRejected)
	r := e.BatchRejection()
	if r == nil || r.Summary.Conflicts != 1 || len(r.Results) != 2 || r.BatchFingerprint == "" {
		t.Fatalf("BatchRejection = %+v", r)
	}
	if c := r.Results[1].Conflict; r.Results[1].Status != client.BatchStatusConflict || c == nil || c.Code != string(client.ErrRevisionConflict) ||
		c.CurrentRevision != 1 || c.ContentHash != ada {
		t.Fatalf("the stale item's result = %+v", r.Results[1])
	}
	if _, err := s.rt.GetRecord(ctx, "crm", "eu-3"); !errors.Is(err, client.ErrRecordNotFound) {
		t.Fatalf("the rejected batch wrote eu-3: %v", err)
	}
	stale.Mode = client.BatchPartial
	p, err := s.rt.ApplyBatch(ctx, "crm", stale)
	if err != nil || p.Summary.Created != 1 || p.Summary.Conflicts != 1 || p.Results[1].Conflict == nil {
		t.Fatalf("partial = %+v, %v", p, err)
	}
	_, err = s.rt.GetBatch(ctx, "crm", "bat_nope")
	wantCode(t, err, client.ErrBatchNotFound)
}

// A merge from a stale base keeps the other side's change; a change of
// the same path on both sides is merge_conflict with the path's steps (a
// member, and the element of an array keyed by id) and the three values,
// on a record's update and on a batch item alike.
func TestUpdateRecord_merge_keepsTheOtherSide_andAClashIsMergeConflictWithItsPaths(t *testing.T) {
	s := startPromptd(t)
	ctx := ctxT(t)
	base := map[string]any{"name": "Ada", "city": "Paris", "items": []map[string]any{{"id": "a", "qty": 1}, {"id": "b", "qty": 1}}}
	r, _, err := s.rt.CreateRecord(ctx, "crm", client.NewRecord{ID: "c1", Payload: base})
	if err != nil {
		t.Fatal(err)
	}
	theirs := map[string]any{"name": "Ada", "city": "Lyon", "items": []map[string]any{{"id": "a", "qty": 2}, {"id": "b", "qty": 1}}}
	if _, err := s.rt.UpdateRecord(ctx, "crm", "c1", client.RecordUpdate{ExpectedRevision: r.Revision, Payload: theirs}); err != nil {
		t.Fatal(err)
	}
	ours := map[string]any{"name": "Ada L.", "city": "Paris", "items": []map[string]any{{"id": "a", "qty": 1}, {"id": "b", "qty": 1}}}
	merged, err := s.rt.UpdateRecord(ctx, "crm", "c1", client.RecordUpdate{ExpectedRevision: r.Revision, Payload: ours, Merge: true, BasePayload: base})
	if err != nil {
		t.Fatalf("merge from revision 1: %v", err)
	}
	var got struct {
		Name, City string
		Items      []struct{ Qty int }
	}
	if err := json.Unmarshal(merged.Payload, &got); err != nil || got.Name != "Ada L." || got.City != "Lyon" || got.Items[0].Qty != 2 {
		t.Fatalf("merged payload %s, want both sides' changes", merged.Payload)
	}

	clash := map[string]any{"name": "Ada", "city": "Nice", "items": []map[string]any{{"id": "a", "qty": 5}, {"id": "b", "qty": 1}}}
	_, err = s.rt.UpdateRecord(ctx, "crm", "c1", client.RecordUpdate{ExpectedRevision: r.Revision, Payload: clash, Merge: true})
	e := wantCode(t, err, client.ErrMergeConflict)
	paths := map[string]client.MergePath{}
	for _, p := range e.MergeConflicts() {
		paths[p.String()] = p
	}
	city, qty := paths["city"], paths["items[id=a].qty"]
	if len(paths) != 2 || string(city.Base) != `"Paris"` || string(city.Ours) != `"Nice"` || string(city.Theirs) != `"Lyon"` ||
		len(qty.Path) != 3 || qty.Path[0].Member != "items" || !qty.Path[1].Keyed() || qty.Path[1].Key != "id" || qty.Path[1].Value != "a" ||
		string(qty.Ours) != "5" || string(qty.Theirs) != "2" {
		t.Fatalf("MergeConflicts = %+v", e.MergeConflicts())
	}
	if e.CurrentRevision() != merged.Revision || e.ContentHash() == "" {
		t.Fatalf("current revision %d (want %d), content hash %q", e.CurrentRevision(), merged.Revision, e.ContentHash())
	}

	p, err := s.rt.ApplyBatch(ctx, "crm", client.BatchInput{Mode: client.BatchPartial, Items: []client.BatchItem{
		{Op: client.BatchUpdate, ID: "c1", ExpectedRevision: r.Revision, Payload: clash, Merge: true}}})
	if err != nil || p.Summary.Conflicts != 1 {
		t.Fatalf("merge batch = %+v, %v", p, err)
	}
	if item := client.MergePathsOf(p.Results[0].Conflict); len(item) != 2 {
		t.Fatalf("MergePathsOf the batch item = %+v (conflict %+v)", item, p.Results[0].Conflict)
	}
}

// A write under an intent is checked in its own transaction: a record the
// scope does not cover is outside_intent, and once the intent is released
// its late writes (an update, a batch) and its renewal are stale_fence.
func TestWriteUnderAnIntent_outsideItsScope_orAfterItsRelease_isRefused(t *testing.T) {
	s := startPromptd(t)
	ctx := ctxT(t)
	for _, id := range []string{"eu-1", "us-1"} {
		if _, _, err := s.rt.CreateRecord(ctx, "crm", client.NewRecord{ID: id, Payload: 1}); err != nil {
			t.Fatal(err)
		}
	}
	in, err := s.rt.RegisterIntent(ctx, client.IntentInput{Holder: "w",
		Scope: client.IntentScope{Records: []client.IntentRecordScope{{Board: "crm", Prefixes: []string{"eu-"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	ref := &client.IntentRef{ID: in.ID, Fence: in.Fence}
	eu, err := s.rt.UpdateRecord(ctx, "crm", "eu-1", client.RecordUpdate{ExpectedRevision: 1, Payload: 2, Intent: ref})
	if err != nil {
		t.Fatalf("a write the intent covers: %v", err)
	}
	_, err = s.rt.UpdateRecord(ctx, "crm", "us-1", client.RecordUpdate{ExpectedRevision: 1, Payload: 2, Intent: ref})
	if e := wantCode(t, err, client.ErrOutsideIntent); e.IntentID() != in.ID || e.Field() != "intent" || e.Status != 422 {
		t.Fatalf("outside: intent %q, field %q, status %d", e.IntentID(), e.Field(), e.Status)
	}
	_, err = s.rt.ApplyBatch(ctx, "crm", client.BatchInput{Mode: client.BatchAllOrNothing, Intent: ref,
		Items: []client.BatchItem{{Op: client.BatchCreate, ID: "eu-2", Payload: 1}, {Op: client.BatchCreate, ID: "us-2", Payload: 1}}})
	wantCode(t, err, client.ErrOutsideIntent)

	released, err := s.rt.ReleaseIntent(ctx, in.ID, in.Fence)
	if err != nil || released.State != client.IntentReleased || released.EndedAt == nil {
		t.Fatalf("release = %+v, %v", released, err)
	}
	_, err = s.rt.UpdateRecord(ctx, "crm", "eu-1", client.RecordUpdate{ExpectedRevision: eu.Revision, Payload: 3, Intent: ref})
	e := wantCode(t, err, client.ErrStaleFence)
	if e.IntentID() != in.ID || e.State() != client.IntentReleased || e.CurrentFence() != in.Fence || e.EndedAt().IsZero() {
		t.Fatalf("late write: intent %q, state %q, fence %d, ended %v", e.IntentID(), e.State(), e.CurrentFence(), e.EndedAt())
	}
	_, err = s.rt.ApplyBatch(ctx, "crm", client.BatchInput{Mode: client.BatchAllOrNothing, Intent: ref,
		Items: []client.BatchItem{{Op: client.BatchCreate, ID: "eu-3", Payload: 1}}})
	wantCode(t, err, client.ErrStaleFence)
	_, err = s.rt.RenewIntent(ctx, in.ID, in.Fence, 0)
	wantCode(t, err, client.ErrStaleFence)
	if r, err := s.rt.GetRecord(ctx, "crm", "eu-1"); err != nil || r.Revision != eu.Revision {
		t.Fatalf("eu-1 after the late write = %+v, %v; want revision %d", r, err, eu.Revision)
	}
	again, err := s.rt.ReleaseIntent(ctx, in.ID, in.Fence)
	if err != nil || again.State != client.IntentReleased {
		t.Fatalf("a second release = %+v, %v; want the intent as it ended", again, err)
	}
	if p, err := s.rt.ListIntents(ctx, client.ListIntentsOptions{Boards: []string{"crm"}}); err != nil || len(p.Items) != 0 {
		t.Fatalf("live intents on crm after the release: %+v, %v", p, err)
	}
}

// appliedErr is the error of an ApplyBatch.
func appliedErr(_ *client.Batch, err error) error { return err }
