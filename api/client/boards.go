package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/promptd/promptd/wire"
)

// The codes of the board routes (api/openapi.yaml "Boards").
const (
	ErrBoardNotFound  Code = "board_not_found"
	ErrRecordNotFound Code = "record_not_found"
	ErrClaimed        Code = "claimed"       // 423: an unfenced write to a claimed record (Holder, ExpiresAt)
	ErrClaimExpired   Code = "claim_expired" // 409: the claim expired before the write (ExpiresAt)
	ErrBoardInUse     Code = "board_in_use"  // 409: a definition removed states records are in
	ErrQuotaExceeded  Code = "quota_exceeded"
)

// ClaimRule is a board's claim: from -> to for TTLMs, back to ReclaimTo
// when it expires, Exhausted after MaxAttempts claims.
type ClaimRule struct {
	From        string `json:"from"`
	To          string `json:"to"`
	TTLMs       int64  `json:"ttl_ms,omitempty"`
	ReclaimTo   string `json:"reclaim_to,omitempty"`
	MaxAttempts int64  `json:"max_attempts,omitempty"`
	Exhausted   string `json:"exhausted"`
}

// BoardDefinition is a board's state machine.
type BoardDefinition struct {
	States      []string            `json:"states"`
	Initial     string              `json:"initial"`
	Transitions map[string][]string `json:"transitions"`
	Claim       ClaimRule           `json:"claim"`
	Terminal    []string            `json:"terminal"`
	Quota       struct {
		ClaimsPerMinute int64 `json:"claims_per_minute,omitempty"`
	} `json:"quota"`
}

// The board shapes are promptd's wire types (package wire): the server
// encodes the same types.
type (
	// Board is a board, its state machine (every member set) and revision.
	Board = wire.Board
	// Record is a board record: Owner and ClaimExpiresAt are nil when it
	// is not claimed, DedupeKey when it has none.
	Record = wire.Record
	// Claim is a granted claim: the record and the fence its writes carry.
	Claim = wire.Claim
	// Heartbeat is a claim's extension.
	Heartbeat = wire.Heartbeat
	// BoardSummary is a board as ListBoards lists it: Counts has every
	// state of its machine with the number of records in it.
	BoardSummary = wire.BoardSummary
)

// NewRecord is a record to create. Payload is any value encoding to JSON
// (a json.RawMessage is sent as is); ID is generated when empty.
type NewRecord struct {
	ID        string
	Payload   any
	Priority  int64
	DedupeKey string
}

// ClaimRequest asks for a claim. TTL 0: the board's; Wait (up to 30 s):
// how long claim-next waits for a record; MinPriority leaves lower ones.
type ClaimRequest struct {
	Holder      string
	TTL         time.Duration
	Wait        time.Duration
	MinPriority *int64
}

// RecordUpdate is a compare-and-set of a record: ExpectedRevision, and
// Fence (0: none) while it is claimed; State "" and Payload nil leave
// them as they are. Merge merges Payload over the changes made since
// ExpectedRevision (three-way, from BasePayload, the payload read at that
// revision, or else the one the board kept): a change on both sides at one
// path is ErrMergeConflict. Intent, when set, is the intent the write is
// made under: ErrStaleFence once it ended, ErrOutsideIntent when its scope
// does not cover the record.
type RecordUpdate struct {
	ExpectedRevision int64
	State            string
	Payload          any
	Fence            int64
	Merge            bool
	BasePayload      any
	Intent           *IntentRef
}

// ListRecordsOptions filter and page a record listing.
type ListRecordsOptions struct {
	State, Owner string
	Limit        int
	Cursor       string
}

func boardPath(board string) string { return "/v1/boards/" + seg(board) }

func recordPath(board, id string) string { return boardPath(board) + "/records/" + seg(id) }

// PutBoard defines (expectedRevision 0) or replaces a board's machine.
func (c *Client) PutBoard(ctx context.Context, board string, def BoardDefinition, expectedRevision int64) (*Board, error) {
	body := struct {
		BoardDefinition
		ExpectedRevision int64 `json:"expected_revision"`
	}{def, expectedRevision}
	var b Board
	_, err := c.do(ctx, call{method: http.MethodPut, path: boardPath(board), body: body}, &b)
	return ret(&b, err)
}

// GetBoard reads a board.
func (c *Client) GetBoard(ctx context.Context, board string) (*Board, error) {
	var b Board
	_, err := c.do(ctx, call{method: http.MethodGet, path: boardPath(board)}, &b)
	return ret(&b, err)
}

// DeleteBoard deletes a board and its records (its creator's token or an
// admin token; every record terminal, else board_in_use).
func (c *Client) DeleteBoard(ctx context.Context, board string) error {
	_, err := c.do(ctx, call{method: http.MethodDelete, path: boardPath(board)}, nil)
	return err
}

// CreateRecord adds a record (with an Idempotency-Key, so a retry creates
// it once). A dedupe_key the board remembers answers with that record and
// created false.
func (c *Client) CreateRecord(ctx context.Context, board string, r NewRecord) (rec *Record, created bool, err error) {
	payload, err := rawJSON(r.Payload)
	if err != nil {
		return nil, false, err
	}
	body := map[string]any{"payload": payload, "priority": r.Priority}
	if r.ID != "" {
		body["id"] = r.ID
	}
	if r.DedupeKey != "" {
		body["dedupe_key"] = r.DedupeKey
	}
	var out Record
	resp, err := c.do(ctx, call{method: http.MethodPost, path: boardPath(board) + "/records", body: body, idempotent: true}, &out)
	if err != nil {
		return nil, false, err
	}
	return &out, resp.StatusCode == http.StatusCreated, nil
}

// GetRecord reads one record.
func (c *Client) GetRecord(ctx context.Context, board, id string) (*Record, error) {
	var r Record
	_, err := c.do(ctx, call{method: http.MethodGet, path: recordPath(board, id)}, &r)
	return ret(&r, err)
}

// ListRecords lists records in board order; next is the cursor of the
// next page ("" at the end).
func (c *Client) ListRecords(ctx context.Context, board string, o ListRecordsOptions) (items []Record, next string, err error) {
	q := url.Values{}
	for k, v := range map[string]string{"state": o.State, "owner": o.Owner, "cursor": o.Cursor} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	var page struct {
		Items []Record `json:"items"`
		Next  *string  `json:"next"`
	}
	if _, err := c.do(ctx, call{method: http.MethodGet, path: boardPath(board) + "/records", query: q}, &page); err != nil {
		return nil, "", err
	}
	if page.Next != nil {
		next = *page.Next
	}
	return page.Items, next, nil
}

// UpdateRecord applies u (compare-and-set on its revision and fence, and
// on its intent's fence under an intent).
func (c *Client) UpdateRecord(ctx context.Context, board, id string, u RecordUpdate) (*Record, error) {
	body := map[string]any{"expected_revision": u.ExpectedRevision}
	if u.State != "" {
		body["state"] = u.State
	}
	if u.Payload != nil {
		p, err := rawJSON(u.Payload)
		if err != nil {
			return nil, err
		}
		body["payload"] = p
	}
	if u.Fence != 0 {
		body["fence"] = u.Fence
	}
	if u.Merge {
		body["merge"] = true
	}
	if u.BasePayload != nil {
		p, err := rawJSON(u.BasePayload)
		if err != nil {
			return nil, err
		}
		body["base_payload"] = p
	}
	if u.Intent != nil {
		body["intent"] = u.Intent
	}
	var r Record
	_, err := c.do(ctx, call{method: http.MethodPatch, path: recordPath(board, id), body: body}, &r)
	return ret(&r, err)
}

// ClaimNext claims the first eligible record of board, waiting up to
// req.Wait; nil, nil when none came. Over the quota: ErrQuotaExceeded,
// whose RetryAfter says when to ask again.
func (c *Client) ClaimNext(ctx context.Context, board string, req ClaimRequest) (*Claim, error) {
	return c.claim(ctx, boardPath(board)+"/claim", req)
}

// ClaimRecord claims one record (ErrInvalidTransition when it is not
// eligible).
func (c *Client) ClaimRecord(ctx context.Context, board, id string, req ClaimRequest) (*Claim, error) {
	req.Wait = 0
	return c.claim(ctx, recordPath(board, id)+"/claim", req)
}

func (c *Client) claim(ctx context.Context, path string, req ClaimRequest) (*Claim, error) {
	body := map[string]any{"holder": req.Holder}
	if req.TTL > 0 {
		body["ttl_ms"] = req.TTL.Milliseconds()
	}
	if req.Wait > 0 {
		body["wait_ms"] = req.Wait.Milliseconds()
	}
	if req.MinPriority != nil {
		body["min_priority"] = *req.MinPriority
	}
	var cl Claim
	resp, err := c.do(ctx, call{method: http.MethodPost, path: path, body: body, idempotent: true}, &cl)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusNoContent {
		return nil, nil
	}
	return &cl, nil
}

// HeartbeatRecord extends a claim by ttl (0: the claim's TTL) from now.
func (c *Client) HeartbeatRecord(ctx context.Context, board, id string, fence int64, ttl time.Duration) (*Heartbeat, error) {
	body := map[string]any{"fence": fence}
	if ttl > 0 {
		body["ttl_ms"] = ttl.Milliseconds()
	}
	var h Heartbeat
	_, err := c.do(ctx, call{method: http.MethodPost, path: recordPath(board, id) + "/heartbeat", body: body}, &h)
	return ret(&h, err)
}

// ReleaseRecord ends a claim: the record goes back to the claim's from
// state.
func (c *Client) ReleaseRecord(ctx context.Context, board, id string, fence int64) (*Record, error) {
	var r Record
	_, err := c.do(ctx, call{method: http.MethodPost, path: recordPath(board, id) + "/release", body: map[string]any{"fence": fence}}, &r)
	return ret(&r, err)
}

// rawJSON encodes v (a json.RawMessage or []byte as is).
func rawJSON(v any) (json.RawMessage, error) {
	switch p := v.(type) {
	case json.RawMessage:
		return p, nil
	case []byte:
		return p, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("promptd: encoding the payload: %w", err)
	}
	return b, nil
}
