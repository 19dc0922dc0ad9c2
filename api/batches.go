package api

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/board"
	"github.com/promptd/promptd/wire"
)

// batchItemRequest is one item of POST /v1/boards/{board}/batches.
type batchItemRequest struct {
	Op               string          `json:"op"`
	ID               *string         `json:"id"`
	Payload          json.RawMessage `json:"payload"`
	Priority         *int64          `json:"priority"`
	DedupeKey        *string         `json:"dedupe_key"`
	ExpectedRevision *int64          `json:"expected_revision"`
	State            *string         `json:"state"`
	Fence            *int64          `json:"fence"`
	Merge            *bool           `json:"merge"`
	BasePayload      json.RawMessage `json:"base_payload"`
}

// batchRequest is the body of POST /v1/boards/{board}/batches.
type batchRequest struct {
	Mode             string             `json:"mode"`
	Items            []batchItemRequest `json:"items"`
	Intent           *wire.IntentRef    `json:"intent"`
	BatchFingerprint *string            `json:"batch_fingerprint"`
}

func (r *batchRequest) input() (board.BatchInput, error) {
	in := board.BatchInput{Mode: r.Mode, Intent: intentRef(r.Intent), Items: make([]board.BatchItem, len(r.Items))}
	if r.BatchFingerprint != nil {
		if *r.BatchFingerprint == "" {
			return in, invalidField("batch_fingerprint", "batch_fingerprint: empty; leave it out for none")
		}
		in.ExpectedFingerprint = *r.BatchFingerprint
	}
	for i, it := range r.Items {
		b := board.BatchItem{Op: it.Op, Payload: it.Payload, BasePayload: it.BasePayload}
		if it.ID != nil {
			if *it.ID == "" {
				return in, invalidField("items["+strconv.Itoa(i)+"].id", "id: empty; leave it out to have one generated")
			}
			b.ID = *it.ID
		}
		if it.Priority != nil {
			b.Priority = *it.Priority
		}
		if it.DedupeKey != nil {
			b.DedupeKey = *it.DedupeKey
		}
		if it.ExpectedRevision != nil {
			b.ExpectedRevision = *it.ExpectedRevision
		}
		if it.State != nil {
			b.State = *it.State
		}
		if it.Fence != nil {
			if *it.Fence <= 0 {
				return in, invalidField("items["+strconv.Itoa(i)+"].fence", "fence must be positive")
			}
			b.Fence = *it.Fence
		}
		if it.Merge != nil {
			b.Merge = *it.Merge
		}
		in.Items[i] = b
	}
	return in, nil
}

func batchEntity(b *board.Batch) any { return batchBody(b) }

// batchBody is a batch as answers show it (the domain's proof is the
// wire shape).
func batchBody(b *board.Batch) wire.Batch { return *b }

// handleApplyBatch: POST /v1/boards/{board}/batches (runtime,
// Idempotency-Key): 201 with the batch's commit proof; all_or_nothing
// with an item that cannot be written: 409 batch_rejected with every
// item's result, nothing written.
func (s *Server) handleApplyBatch(c echo.Context) error {
	bs, name, err := s.boardTarget(c)
	if err != nil {
		return err
	}
	var req batchRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	in, err := req.input()
	if err != nil {
		return err
	}
	b, err := bs.ApplyBatch(c.Request().Context(), name, in, recordAnswer(s, c, http.StatusCreated, batchEntity))
	if err != nil {
		return err
	}
	return s.send(c, http.StatusCreated, batchBody(b))
}

// handleGetBatch: GET /v1/boards/{board}/batches/{id}: a stored batch.
func (s *Server) handleGetBatch(c echo.Context) error {
	bs, name, id, err := s.recordTarget(c)
	if err != nil {
		return err
	}
	b, err := bs.GetBatch(c.Request().Context(), name, id)
	if err != nil {
		return err
	}
	return s.send(c, http.StatusOK, batchBody(b))
}
