package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/promptd/promptd/internal/canonjson"
	"github.com/promptd/promptd/wire"
)

// The codes of board batches and merges (api/openapi.yaml "Boards").
const (
	ErrBatchNotFound Code = "batch_not_found"
	ErrBatchRejected Code = "batch_rejected" // 409: an all_or_nothing batch wrote nothing (BatchRejection)
	ErrMergeConflict Code = "merge_conflict" // 409: a merge met changes on both sides at the same paths (MergeConflicts; a record's CurrentRevision, ContentHash)
)

// Batch modes and item operations.
const (
	BatchAllOrNothing = "all_or_nothing"
	BatchPartial      = "partial"
	BatchCreate       = "create"
	BatchUpdate       = "update"
)

// The statuses of a batch item's result.
const (
	BatchStatusCreated  = "created"
	BatchStatusExists   = "exists" // a create whose id or live dedupe_key the board has: nothing written
	BatchStatusUpdated  = "updated"
	BatchStatusMerged   = "merged"
	BatchStatusConflict = "conflict"
	BatchStatusInvalid  = "invalid"
)

// The batch shapes are promptd's wire types (package wire).
type (
	// Batch is an applied batch: its commit proof (per item the record's
	// revision before and after and its content hash after), stored and
	// readable by id with GetBatch.
	Batch = wire.Batch
	// BatchItemResult is one item's part of the proof, in request order.
	BatchItemResult = wire.BatchItemResult
	// BatchItemConflict says why an item was not written; MergePathsOf
	// decodes the paths of a merge_conflict.
	BatchItemConflict = wire.BatchItemConflict
	// BatchSummary counts a batch's items by status.
	BatchSummary = wire.BatchSummary
)

// BatchItem is one write of a batch: a create (ID optional, Payload,
// Priority, DedupeKey) or an update (ID, ExpectedRevision, State and/or
// Payload, the claim's Fence while claimed; Merge to merge Payload over the
// changes made since ExpectedRevision, from BasePayload, the payload read
// at that revision, or else the one the board kept). Payload and
// BasePayload are any value encoding to JSON (a json.RawMessage is sent as
// is); nil leaves them out.
type BatchItem struct {
	Op               string
	ID               string
	Payload          any
	Priority         int64
	DedupeKey        string
	ExpectedRevision int64
	State            string
	Fence            int64
	Merge            bool
	BasePayload      any
}

// BatchInput is a batch of record writes on one board. Mode is
// BatchAllOrNothing (any item that cannot be written: nothing is, and the
// error is ErrBatchRejected) or BatchPartial. Intent, when set, must be
// live with its fence and cover every record written. BatchFingerprint,
// when set, must be the items' Fingerprint: the server then applies
// exactly the batch it was computed for.
type BatchInput struct {
	Mode             string
	Items            []BatchItem
	Intent           *IntentRef
	BatchFingerprint string
}

// batchItemBody is an item as the request carries it: the members at
// their zero value left out, as the fingerprint counts them.
type batchItemBody struct {
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

func (in BatchInput) items() ([]batchItemBody, error) {
	out := make([]batchItemBody, len(in.Items))
	for i, it := range in.Items {
		b := batchItemBody{Op: it.Op, ID: it.ID, Priority: it.Priority, DedupeKey: it.DedupeKey,
			ExpectedRevision: it.ExpectedRevision, State: it.State, Fence: it.Fence, Merge: it.Merge}
		var err error
		if it.Payload != nil {
			if b.Payload, err = rawJSON(it.Payload); err != nil {
				return nil, fmt.Errorf("promptd: batch item %d: %w", i, err)
			}
		}
		if it.BasePayload != nil {
			if b.BasePayload, err = rawJSON(it.BasePayload); err != nil {
				return nil, fmt.Errorf("promptd: batch item %d: base payload: %w", i, err)
			}
		}
		out[i] = b
	}
	return out, nil
}

// Fingerprint is the batch's fingerprint as promptd computes it: the
// content hash of the canonical JSON of {mode, items}, each item's members
// at their zero value left out. A batch's answer carries it; a caller that
// computed it before sending knows the proof is of its own batch.
func (in BatchInput) Fingerprint() (string, error) {
	items, err := in.items()
	if err != nil {
		return "", err
	}
	raw, err := json.Marshal(struct {
		Mode  string          `json:"mode"`
		Items []batchItemBody `json:"items"`
	}{in.Mode, items})
	if err != nil {
		return "", fmt.Errorf("promptd: encoding the batch: %w", err)
	}
	c, err := canonjson.Canonical(raw)
	if err != nil {
		return "", fmt.Errorf("promptd: a batch payload: %w", err)
	}
	return canonjson.Hash(c), nil
}

func batchesPath(board string) string { return boardPath(board) + "/batches" }

// ApplyBatch writes a batch of records on board in one transaction (with
// an Idempotency-Key, so a retry applies it once) and answers its commit
// proof. In BatchAllOrNothing an item that cannot be written is
// ErrBatchRejected, whose BatchRejection holds every item's result; a
// BatchPartial batch answers the conflicts in its results. Under an intent
// that ended: ErrStaleFence; a record outside its scope: ErrOutsideIntent.
func (c *Client) ApplyBatch(ctx context.Context, board string, in BatchInput) (*Batch, error) {
	items, err := in.items()
	if err != nil {
		return nil, err
	}
	body := map[string]any{"mode": in.Mode, "items": items}
	if in.Intent != nil {
		body["intent"] = in.Intent
	}
	if in.BatchFingerprint != "" {
		body["batch_fingerprint"] = in.BatchFingerprint
	}
	var b Batch
	_, err = c.do(ctx, call{method: http.MethodPost, path: batchesPath(board), body: body, idempotent: true}, &b)
	return ret(&b, err)
}

// GetBatch reads a stored batch and its proof (ErrBatchNotFound once the
// board's batch retention dropped it).
func (c *Client) GetBatch(ctx context.Context, board, id string) (*Batch, error) {
	var b Batch
	_, err := c.do(ctx, call{method: http.MethodGet, path: batchesPath(board) + "/" + seg(id)}, &b)
	return ret(&b, err)
}

// BatchRejection is what an ErrBatchRejected carries: the fingerprint of
// the batch that was not written, every item's result (the conflicting
// and invalid ones with their Conflict) and the summary.
type BatchRejection struct {
	BatchFingerprint string
	Results          []BatchItemResult
	Summary          BatchSummary
}
