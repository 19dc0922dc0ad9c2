package wire

import "encoding/json"

// BatchItemConflict says why a batch item was not written: a problem
// code with the record's current revision, content hash, fence and state,
// and for merge_conflict per path the base, ours and theirs values.
type BatchItemConflict struct {
	Code            string          `json:"code"`
	Detail          string          `json:"detail"`
	Field           string          `json:"field,omitempty"`
	CurrentRevision int64           `json:"current_revision,omitempty"`
	ContentHash     string          `json:"content_hash,omitempty"`
	CurrentFence    *int64          `json:"current_fence,omitempty"`
	State           string          `json:"state,omitempty"`
	Conflicts       json.RawMessage `json:"conflicts,omitempty"`
}

// BatchItemResult is one item's part of a batch's commit proof.
type BatchItemResult struct {
	Index          int                `json:"index"`
	Op             string             `json:"op"`
	ID             string             `json:"id"`
	Status         string             `json:"status"` // created, exists, updated, merged, conflict, invalid
	RevisionBefore int64              `json:"revision_before"`
	RevisionAfter  int64              `json:"revision_after"`
	ContentHash    string             `json:"content_hash,omitempty"`
	Conflict       *BatchItemConflict `json:"conflict,omitempty"`
}

// BatchSummary counts a batch's items by status.
type BatchSummary struct {
	Created   int `json:"created"`
	Exists    int `json:"exists"`
	Updated   int `json:"updated"`
	Merged    int `json:"merged"`
	Conflicts int `json:"conflicts"`
	Invalid   int `json:"invalid"`
}

// Batch is an applied board batch: schema BoardBatch.
type Batch struct {
	ID               string            `json:"id"`
	Board            string            `json:"board"`
	Mode             string            `json:"mode"`
	BatchFingerprint string            `json:"batch_fingerprint"`
	IntentID         string            `json:"intent_id,omitempty"`
	Results          []BatchItemResult `json:"results"`
	Summary          BatchSummary      `json:"summary"`
	CreatedBy        string            `json:"created_by"`
	CreatedAt        Time              `json:"created_at"`
}
