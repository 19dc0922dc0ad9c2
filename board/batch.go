package board

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/intent"
	"github.com/promptd/promptd/internal/canonjson"
	"github.com/promptd/promptd/problem"
	"github.com/promptd/promptd/sqlstore"
	"github.com/promptd/promptd/wire"
)

// Batch limits and modes.
const (
	MaxBatchItems      = 1000
	BatchAllOrNothing  = "all_or_nothing"
	BatchPartial       = "partial"
	DefaultBatchRetain = 72 * time.Hour
)

// Item statuses and operations of a batch.
const (
	OpCreate = "create"
	OpUpdate = "update"

	StatusCreated  = "created"
	StatusExists   = "exists" // a create whose id or dedupe_key the board has: nothing written
	StatusUpdated  = "updated"
	StatusMerged   = "merged"
	StatusConflict = "conflict"
	StatusInvalid  = "invalid"
)

// BatchItem is one write of a batch: a create (ID optional, Payload,
// Priority, DedupeKey) or an update (ID, ExpectedRevision, State and/or
// Payload, the claim's Fence while claimed; Merge to merge Payload over
// changes made since ExpectedRevision, from BasePayload or the payload the
// board kept at that revision).
type BatchItem struct {
	Op               string          `json:"op"`
	ID               string          `json:"id,omitempty"`
	Payload          json.RawMessage `json:"payload,omitempty"`
	Priority         int64           `json:"priority,omitempty"`
	DedupeKey        string          `json:"dedupe_key,omitempty"`
	ExpectedRevision int64           `json:"expected_revision,omitempty"`
	State            string          `json:"state,omitempty"`
	Fence            int64           `json:"fence,omitempty"`
	Merge            bool            `json:"merge,omitempty"`
	BasePayload      json.RawMessage `json:"base_payload,omitempty"`
}

// BatchInput is a batch of record writes on one board.
type BatchInput struct {
	Mode  string
	Items []BatchItem
	// Intent, when set, is the intent the batch is written under: it must
	// be live, with this fence, and cover every record the batch writes.
	Intent *intent.Ref
	// ExpectedFingerprint, when set, must be the batch's (Fingerprint): a
	// client's proof that the server applies the items it built.
	ExpectedFingerprint string
}

// Fingerprint is the batch's: the content hash of the canonical JSON of
// {"mode", "items"}, each item with its members at their zero value left
// out (the JSON of BatchItem).
func (in BatchInput) Fingerprint() (string, error) {
	raw, err := json.Marshal(struct {
		Mode  string      `json:"mode"`
		Items []BatchItem `json:"items"`
	}{in.Mode, in.Items})
	if err != nil {
		return "", err
	}
	c, err := canonjson.Canonical(raw)
	if err != nil {
		return "", err
	}
	return canonjson.Hash(c), nil
}

// ItemConflict says why an item was not written: Code is a problem code
// (revision_conflict, stale_fence, claim_expired, claimed,
// invalid_transition, merge_conflict, record_not_found, invalid_field,
// invalid_id, limit_exceeded), with the record's current revision,
// content hash and fence where it exists.
type ItemConflict = wire.BatchItemConflict

// ItemResult is one item's part of the proof, in request order: the
// record's revision before and after the write and its content hash after
// it, or the conflict.
type ItemResult = wire.BatchItemResult

// BatchSummary counts the items by status.
type BatchSummary = wire.BatchSummary

// Batch is an applied batch: its commit proof, stored and readable by id.
type Batch = wire.Batch

// BatchRejected: an all_or_nothing batch had an item that could not be
// written, so nothing was (and nothing stored). Batch is the proof of why.
type BatchRejected struct {
	Batch *Batch
}

func (e *BatchRejected) Error() string {
	return fmt.Sprintf("board: batch rejected: %d conflicts, %d invalid", e.Batch.Summary.Conflicts, e.Batch.Summary.Invalid)
}

// Problem is 409 batch_rejected with every item's result.
func (e *BatchRejected) Problem() *problem.Problem {
	b := e.Batch
	return (&problem.Problem{Code: problem.BatchRejected, Detail: fmt.Sprintf(
		"all_or_nothing: %d items conflict and %d are invalid; nothing was written", b.Summary.Conflicts, b.Summary.Invalid)}).
		With("batch_fingerprint", b.BatchFingerprint).With("results", b.Results).With("summary", b.Summary)
}

// ErrBatchNotFound: no batch of that id on the board (or older than the
// retention).
var ErrBatchNotFound = problem.New(problem.BatchNotFound, "board: no such batch", "no such batch on the board")

func (in *BatchInput) check() error {
	if in.Mode != BatchAllOrNothing && in.Mode != BatchPartial {
		return invalidf("mode", `mode must be "all_or_nothing" or "partial"`)
	}
	if len(in.Items) == 0 || len(in.Items) > MaxBatchItems {
		return invalidf("items", "a batch has 1..%d items", MaxBatchItems)
	}
	for i := range in.Items {
		it := &in.Items[i]
		f := fmt.Sprintf("items[%d]", i)
		switch it.Op {
		case OpCreate:
			if it.ExpectedRevision != 0 || it.State != "" || it.Fence != 0 || it.Merge || it.BasePayload != nil {
				return invalidf(f, "a create takes id, payload, priority and dedupe_key only")
			}
		case OpUpdate:
			if it.ID == "" {
				return invalidf(f+".id", "an update names its record's id")
			}
			if it.ExpectedRevision < 1 {
				return invalidf(f+".expected_revision", "expected_revision is required: the record's revision, >= 1")
			}
			if it.Payload == nil && it.State == "" {
				return invalidf(f, "an update changes payload or state")
			}
			if it.Fence < 0 {
				return invalidf(f+".fence", "fence must be positive")
			}
			if it.Priority != 0 || it.DedupeKey != "" {
				return invalidf(f, "an update takes expected_revision, state, payload, fence, merge and base_payload only")
			}
			if (it.Merge || it.BasePayload != nil) && it.Payload == nil {
				return invalidf(f+".payload", "a merge needs the payload to merge")
			}
			if it.BasePayload != nil && !it.Merge {
				return invalidf(f+".base_payload", "base_payload is for a merge (merge: true)")
			}
		default:
			return invalidf(f+".op", `op must be "create" or "update"`)
		}
		if it.ID != "" {
			if err := checkID(f+".id", it.ID); err != nil {
				return err
			}
		}
		if it.Op == OpCreate && it.Payload == nil {
			return invalidf(f+".payload", "payload is required (any JSON, null included)")
		}
		if it.Payload != nil {
			if err := validPayload(it.Payload); err != nil {
				return invalidf(f+".payload", "%s", err.(*InvalidError).Detail)
			}
		}
		if it.BasePayload != nil && !json.Valid(it.BasePayload) {
			return invalidf(f+".base_payload", "base_payload must be JSON")
		}
		if it.Priority > MaxPriority || it.Priority < -MaxPriority {
			return invalidf(f+".priority", "priority must be within ±%d", int64(MaxPriority))
		}
		if it.DedupeKey != "" {
			if err := checkOpaque(f+".dedupe_key", it.DedupeKey); err != nil {
				return err
			}
		}
	}
	return nil
}

// ApplyBatch writes a batch of creates and updates on one board in one
// transaction, and answers its commit proof. Every update is a
// compare-and-set on its expected revision (and the claim's fence while
// claimed), decided on the records' rows locked in id order; items on one
// record chain (the second expects the first's new revision). An update
// with Merge merges its payload over the changes since its revision
// instead of conflicting where they do not overlap. all_or_nothing writes
// nothing when any item fails (*BatchRejected); partial writes the others.
// An applied batch is stored with its proof (GetBatch) and audited
// (board.batch_applied, beside each record's own event).
func (s *Service) ApplyBatch(ctx context.Context, board string, in BatchInput, then ...sqlstore.Then[*Batch]) (*Batch, error) {
	if err := checkID("board", board); err != nil {
		return nil, err
	}
	in.Items = slices.Clone(in.Items)
	if err := in.check(); err != nil {
		return nil, err
	}
	fp, err := in.Fingerprint()
	if err != nil {
		return nil, invalidf("items", "%v", err)
	}
	if in.ExpectedFingerprint != "" && in.ExpectedFingerprint != fp {
		return nil, (&InvalidError{Code: problem.InvalidField, Field: "batch_fingerprint", Detail: fmt.Sprintf(
			"batch_fingerprint %s is not the items' fingerprint %s: the batch is not the one it was computed for", in.ExpectedFingerprint, fp)})
	}
	for i := range in.Items { // ids generated after the fingerprint, which a client computes without them
		if in.Items[i].ID == "" {
			in.Items[i].ID = newID()
		}
	}
	if in.Intent != nil && s.o.Intents == nil {
		return nil, invalidf("intent", "this server keeps no intents")
	}
	creates := slices.ContainsFunc(in.Items, func(it BatchItem) bool { return it.Op == OpCreate })
	ctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	if creates {
		if err := s.ensureBoard(ctx, board); err != nil {
			return nil, err
		}
	}
	out, err := sqlstore.Transact(ctx, s.db, func(tx *gorm.DB) (*Batch, error) {
		return s.applyBatch(ctx, tx, board, &in, fp, creates)
	}, then...)
	var rej *BatchRejected
	if err != nil && !errors.As(err, &rej) {
		return nil, storeErr(err)
	}
	if err != nil {
		return nil, err
	}
	if out.Summary.Created > 0 || out.Summary.Updated > 0 || out.Summary.Merged > 0 {
		s.publish(ctx, board, 0)
	}
	return out, nil
}

func (s *Service) applyBatch(ctx context.Context, tx *gorm.DB, board string, in *BatchInput, fp string, creates bool) (*Batch, error) {
	// creates lock the board row (so the open-record count is exact, as
	// for a single create); updates read it
	b, err := s.readBoard(tx, board, creates)
	if err != nil {
		return nil, err
	}
	def, err := parseDefinition(b.Definition)
	if err != nil {
		return nil, err
	}
	now := b.NowMs
	if in.Intent != nil {
		targets := make([]intent.Target, len(in.Items))
		for i, it := range in.Items {
			targets[i] = intent.Target{Board: board, Record: it.ID}
		}
		if err := s.o.Intents.Check(tx, *in.Intent, "intent", targets...); err != nil {
			return nil, err
		}
	}
	// every record the batch names, locked in id order (one statement)
	ids := make([]string, 0, len(in.Items))
	for _, it := range in.Items {
		ids = append(ids, it.ID)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	cur, err := s.lockRecords(tx, board, ids)
	if err != nil {
		return nil, err
	}
	orig := map[string]recordRow{}
	for id, r := range cur {
		orig[id] = *r
	}
	res := &Batch{ID: newBatchID(), Board: board, Mode: in.Mode, BatchFingerprint: fp, Results: make([]ItemResult, len(in.Items)),
		CreatedBy: audit.Actor(ctx), CreatedAt: wire.At(time.UnixMilli(now).UTC())}
	if in.Intent != nil {
		res.IntentID = in.Intent.ID
	}
	var open int64 = -1
	created := map[string]bool{}
	for i := range in.Items {
		it := &in.Items[i]
		r := &res.Results[i]
		r.Index, r.Op, r.ID = i, it.Op, it.ID
		var err error
		if it.Op == OpCreate {
			err = s.batchCreate(tx, b, def, it, cur, created, &open, r)
		} else {
			err = s.batchUpdate(tx, b, def, it, cur, r)
		}
		if err != nil {
			if c := itemConflict(err); c != nil {
				r.Status, r.Conflict = StatusConflict, c
				if c.Code == problem.InvalidField || c.Code == problem.InvalidID || c.Code == problem.LimitExceeded {
					r.Status = StatusInvalid
				}
				if rec := cur[it.ID]; rec != nil {
					r.RevisionBefore, r.RevisionAfter = rec.Revision, rec.Revision
					c.CurrentRevision, c.ContentHash = rec.Revision, contentHash(rec.Payload)
					if rec.Owner != "" {
						f := rec.Fence
						c.CurrentFence = &f
					}
					c.State = rec.State
				}
				continue
			}
			return nil, err
		}
	}
	for _, r := range res.Results {
		switch r.Status {
		case StatusCreated:
			res.Summary.Created++
		case StatusExists:
			res.Summary.Exists++
		case StatusUpdated:
			res.Summary.Updated++
		case StatusMerged:
			res.Summary.Merged++
		case StatusConflict:
			res.Summary.Conflicts++
		case StatusInvalid:
			res.Summary.Invalid++
		}
	}
	if in.Mode == BatchAllOrNothing && res.Summary.Conflicts+res.Summary.Invalid > 0 {
		return nil, &BatchRejected{Batch: res}
	}
	// the writes: each record's final row over the row locked, in id order
	for _, id := range ids {
		next, ok := cur[id]
		if !ok {
			continue
		}
		if prev, existed := orig[id]; !existed {
			if !created[id] {
				continue
			}
			if err := s.insertRecord(tx, next); err != nil {
				return nil, err
			}
			if err := s.keepPayload(tx, nil, next); err != nil {
				return nil, err
			}
			if err := s.appendEvent(ctx, tx, "board.record_created", next); err != nil {
				return nil, err
			}
		} else if next.Revision != prev.Revision {
			if err := s.write(tx, &prev, next); err != nil {
				return nil, err
			}
			if err := s.keepPayload(tx, &prev, next); err != nil {
				return nil, err
			}
			if err := s.appendEvent(ctx, tx, "board.record_updated", next); err != nil {
				return nil, err
			}
		}
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	if err := tx.Exec(`INSERT INTO board_batches (board, id, fingerprint, body, created_at_ms) VALUES (?, ?, ?, ?, ?)`,
		board, res.ID, fp, string(raw), now).Error; err != nil {
		return nil, err
	}
	details := map[string]any{"batch": res.ID, "batch_fingerprint": fp, "mode": in.Mode, "summary": res.Summary}
	if res.IntentID != "" {
		details["intent"] = res.IntentID
	}
	if err := s.audit.Append(ctx, tx, audit.Event{Action: "board.batch_applied", Board: board, Resource: "boards/" + board + "/batches/" + res.ID},
		details); err != nil {
		return nil, err
	}
	return res, nil
}

// lockRecords reads (and on MySQL locks) the records of ids, in id order.
func (s *Service) lockRecords(tx *gorm.DB, board string, ids []string) (map[string]*recordRow, error) {
	out := make(map[string]*recordRow, len(ids))
	for chunk := range slices.Chunk(ids, 500) {
		args := []any{board}
		for _, id := range chunk {
			args = append(args, id)
		}
		var rows []recordRow
		if err := tx.Raw(`SELECT `+recordCols+` FROM board_records WHERE board = ? AND id IN (`+
			strings.TrimSuffix(strings.Repeat("?, ", len(chunk)), ", ")+`) ORDER BY id`+sqlstore.ForUpdate(tx), args...).Scan(&rows).Error; err != nil {
			return nil, err
		}
		for i := range rows {
			out[rows[i].ID] = &rows[i]
		}
	}
	return out, nil
}

func (s *Service) batchCreate(tx *gorm.DB, b *boardRow, def *Definition, it *BatchItem, cur map[string]*recordRow, created map[string]bool,
	open *int64, r *ItemResult) error {
	if ex, ok := cur[it.ID]; ok {
		r.Status, r.RevisionBefore, r.RevisionAfter, r.ContentHash = StatusExists, ex.Revision, ex.Revision, contentHash(ex.Payload)
		return nil
	}
	var dedupe *string
	if it.DedupeKey != "" {
		var rows []struct {
			RecordID    string
			ExpiresAtMs int64
		}
		if err := tx.Raw(`SELECT record_id, expires_at_ms FROM board_dedupe WHERE board = ? AND dedupe_key = ?`+sqlstore.ForUpdate(tx),
			b.Board, it.DedupeKey).Scan(&rows).Error; err != nil {
			return err
		}
		if len(rows) > 0 && rows[0].ExpiresAtMs > b.NowMs {
			ex, err := readRecord(tx, b.Board, rows[0].RecordID, false)
			if err != nil && !errors.Is(err, ErrRecordNotFound) {
				return err
			}
			r.ID, r.Status = rows[0].RecordID, StatusExists
			if ex != nil {
				r.RevisionBefore, r.RevisionAfter, r.ContentHash = ex.Revision, ex.Revision, contentHash(ex.Payload)
			}
			return nil
		}
		if err := tx.Exec(`DELETE FROM board_dedupe WHERE board = ? AND dedupe_key = ?`, b.Board, it.DedupeKey).Error; err != nil {
			return err
		}
		if err := tx.Exec(`INSERT INTO board_dedupe (board, dedupe_key, record_id, expires_at_ms) VALUES (?, ?, ?, ?)`,
			b.Board, it.DedupeKey, it.ID, b.NowMs+s.o.DedupeTTL.Milliseconds()).Error; err != nil {
			return err
		}
		dedupe = &it.DedupeKey
	}
	if *open < 0 {
		if err := tx.Raw(`SELECT COUNT(*) FROM board_records WHERE board = ? AND open_rec = 1`, b.Board).Scan(open).Error; err != nil {
			return err
		}
	}
	openRec := int64(1)
	if def.IsTerminal(def.Initial) {
		openRec = 0
	}
	if *open+openRec > s.o.MaxRecords {
		return &QuotaExceeded{What: "records", Limit: s.o.MaxRecords, RetryAfter: time.Second}
	}
	*open += openRec
	rec := &recordRow{Board: b.Board, ID: it.ID, Revision: 1, State: def.Initial, Priority: it.Priority, Payload: string(it.Payload),
		DedupeKey: dedupe, OpenRec: openRec, CreatedAtMs: b.NowMs, UpdatedAtMs: b.NowMs}
	cur[it.ID], created[it.ID] = rec, true
	r.Status, r.RevisionBefore, r.RevisionAfter, r.ContentHash = StatusCreated, 0, 1, contentHash(rec.Payload)
	return nil
}

func (s *Service) insertRecord(tx *gorm.DB, r *recordRow) error {
	return tx.Exec(`INSERT INTO board_records (`+recordCols+`) VALUES (?, ?, ?, ?, '', 0, NULL, 0, ?, 0, ?, ?, ?, ?, ?)`,
		r.Board, r.ID, r.Revision, r.State, r.Priority, r.Payload, r.DedupeKey, r.OpenRec, r.CreatedAtMs, r.UpdatedAtMs).Error
}

func (s *Service) batchUpdate(tx *gorm.DB, b *boardRow, def *Definition, it *BatchItem, cur map[string]*recordRow, r *ItemResult) error {
	rec, ok := cur[it.ID]
	if !ok {
		return ErrRecordNotFound
	}
	var fence *int64
	if it.Fence != 0 {
		fence = &it.Fence
	}
	if fence != nil && *fence != rec.Fence {
		return &StaleFence{Fence: *fence, Current: rec.Fence}
	}
	if def.IsTerminal(rec.State) {
		return &InvalidTransition{State: rec.State}
	}
	if err := checkWriter(rec, b.NowMs, fence); err != nil {
		return err
	}
	payload, status := it.Payload, StatusUpdated
	if rec.Revision != it.ExpectedRevision {
		if !it.Merge || it.ExpectedRevision > rec.Revision {
			return &RevisionConflict{Expected: it.ExpectedRevision, Current: rec.Revision}
		}
		m, err := s.merged(tx, rec, it.ExpectedRevision, it.BasePayload, it.Payload)
		if err != nil {
			return err
		}
		payload, status = m, StatusMerged
	}
	var state *string
	if it.State != "" {
		state = &it.State
	}
	next, err := def.updated(rec, b.NowMs, state, payload)
	if err != nil {
		return err
	}
	r.Status, r.RevisionBefore, r.RevisionAfter, r.ContentHash = status, rec.Revision, next.Revision, contentHash(next.Payload)
	cur[it.ID] = &next
	return nil
}

// itemConflict is err as an item's conflict, or nil for an error that is
// not about the item (the store's), which ends the batch.
func itemConflict(err error) *ItemConflict {
	var mc *MergeConflict
	if errors.As(err, &mc) {
		raw, _ := json.Marshal(mc.Paths)
		return &ItemConflict{Code: problem.MergeConflict, Detail: mc.Problem().Detail, Conflicts: raw}
	}
	var pe interface{ Problem() *problem.Problem }
	if errors.As(err, &pe) {
		p := pe.Problem()
		c := &ItemConflict{Code: p.Code, Detail: p.Detail}
		var ie *InvalidError
		if errors.As(err, &ie) {
			c.Field = ie.Field
		}
		return c
	}
	if errors.Is(err, ErrRecordNotFound) {
		return &ItemConflict{Code: problem.RecordNotFound, Detail: "no such record on the board"}
	}
	return nil
}

func newBatchID() string { return "bat_" + strings.TrimPrefix(newID(), "rec_") }

// GetBatch returns a stored batch (its proof) by id.
func (s *Service) GetBatch(ctx context.Context, board, id string) (*Batch, error) {
	if err := checkID("board", board); err != nil {
		return nil, err
	}
	if err := checkID("id", id); err != nil {
		return nil, err
	}
	ctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	var bodies []string
	if err := s.db.WithContext(ctx).Raw(`SELECT body FROM board_batches WHERE board = ? AND id = ?`, board, id).Scan(&bodies).Error; err != nil {
		return nil, storeErr(err)
	}
	if len(bodies) == 0 {
		return nil, ErrBatchNotFound
	}
	var out Batch
	if err := json.Unmarshal([]byte(bodies[0]), &out); err != nil {
		return nil, err
	}
	return &out, nil
}
