package wire

import "encoding/json"

// ClaimRule is a board's claim: From -> To for TTLMs; an expired claim
// goes back to ReclaimTo, or to Exhausted once the record was claimed
// MaxAttempts times.
type ClaimRule struct {
	From        string `json:"from"`
	To          string `json:"to"`
	TTLMs       int64  `json:"ttl_ms"`
	ReclaimTo   string `json:"reclaim_to"`
	MaxAttempts int64  `json:"max_attempts"`
	Exhausted   string `json:"exhausted"`
}

// Quota limits claims per token per minute, cluster-wide; 0: none.
type Quota struct {
	ClaimsPerMinute int64 `json:"claims_per_minute"`
}

// BoardDefinition is a board's state machine, every member set, as
// answers show it.
type BoardDefinition struct {
	States      []string            `json:"states"`
	Initial     string              `json:"initial"`
	Transitions map[string][]string `json:"transitions"`
	Claim       ClaimRule           `json:"claim"`
	Terminal    []string            `json:"terminal"`
	Quota       Quota               `json:"quota"`
}

// Board is a board, its state machine and revision: schema Board.
type Board struct {
	Board    string `json:"board"`
	Revision int64  `json:"revision"`
	BoardDefinition
	CreatedBy string `json:"created_by"` // the token that created it
	CreatedAt Time   `json:"created_at"`
	UpdatedAt Time   `json:"updated_at"`
}

// BoardSummary is a board as GET /v1/boards lists it: Counts has every
// state of its machine with the number of records in it.
type BoardSummary struct {
	Board     string           `json:"board"`
	Revision  int64            `json:"revision"`
	CreatedBy string           `json:"created_by"`
	Counts    map[string]int64 `json:"counts"`
	CreatedAt Time             `json:"created_at"`
	UpdatedAt Time             `json:"updated_at"`
}

// Record is a board record: schema Record. Owner and ClaimExpiresAt
// are nil when it is not claimed, DedupeKey when it has none.
type Record struct {
	Board          string          `json:"board"`
	ID             string          `json:"id"`
	Revision       int64           `json:"revision"`
	State          string          `json:"state"`
	Owner          *string         `json:"owner"`
	Fence          int64           `json:"fence"`
	ClaimExpiresAt *Time           `json:"claim_expires_at"`
	ClaimTTLMs     int64           `json:"claim_ttl_ms"`
	Priority       int64           `json:"priority"`
	Attempts       int64           `json:"attempts"`
	Payload        json.RawMessage `json:"payload"`
	DedupeKey      *string         `json:"dedupe_key"`
	CreatedAt      Time            `json:"created_at"`
	UpdatedAt      Time            `json:"updated_at"`
}

// Claim is a granted claim: the record and the fence every write under
// the claim carries.
type Claim struct {
	Record Record `json:"record"`
	Fence  int64  `json:"fence"`
}

// Heartbeat is a claim's extension: the record's revision and the claim's
// new expiry.
type Heartbeat struct {
	Revision       int64 `json:"revision"`
	ClaimExpiresAt Time  `json:"claim_expires_at"`
	ClaimTTLMs     int64 `json:"claim_ttl_ms"`
}
