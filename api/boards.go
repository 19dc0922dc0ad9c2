package api

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/board"
	"github.com/promptd/promptd/wire"
)

// recordBody is r as every board route answers it.
func recordBody(r *board.Record) wire.Record {
	out := wire.Record{Board: r.Board, ID: r.ID, Revision: r.Revision, State: r.State, Fence: r.Fence, ClaimTTLMs: r.ClaimTTLMs,
		Priority: r.Priority, Attempts: r.Attempts, Payload: r.Payload, CreatedAt: wire.At(r.CreatedAt), UpdatedAt: wire.At(r.UpdatedAt)}
	if r.Owner != "" {
		o := r.Owner
		out.Owner = &o
	}
	if r.ClaimExpiresAt != nil {
		t := wire.At(*r.ClaimExpiresAt)
		out.ClaimExpiresAt = &t
	}
	if r.DedupeKey != "" {
		k := r.DedupeKey
		out.DedupeKey = &k
	}
	return out
}

func recordEntity(r *board.Record) any { return recordBody(r) }

// claimEntity is a granted claim: the record and the fence every write
// under the claim carries.
func claimEntity(r *board.Record) any { return wire.Claim{Record: recordBody(r), Fence: r.Fence} }

// boardBody is a board and its state machine.
func boardBody(b *board.Board) wire.Board {
	d := b.Definition
	return wire.Board{Board: b.Board, Revision: b.Revision,
		BoardDefinition: wire.BoardDefinition{States: d.States, Initial: d.Initial, Transitions: d.Transitions,
			Claim: d.Claim, Terminal: d.Terminal, Quota: d.Quota},
		CreatedBy: b.CreatedBy, CreatedAt: wire.At(b.CreatedAt), UpdatedAt: wire.At(b.UpdatedAt)}
}

// boardTarget is the prelude of every /v1/boards/{board} handler.
func (s *Server) boardTarget(c echo.Context) (*board.Service, string, error) {
	name, err := pathID(c, "board")
	return s.rt.Boards, name, err
}

// recordTarget adds the record id.
func (s *Server) recordTarget(c echo.Context) (*board.Service, string, string, error) {
	bs, name, err := s.boardTarget(c)
	if err != nil {
		return nil, "", "", err
	}
	id, err := pathID(c, "id")
	return bs, name, id, err
}

// putBoardRequest is the body of PUT /v1/boards/{board}.
type putBoardRequest struct {
	States           []string            `json:"states"`
	Initial          string              `json:"initial"`
	Transitions      map[string][]string `json:"transitions"`
	Claim            *board.ClaimRule    `json:"claim"`
	Terminal         []string            `json:"terminal"`
	Quota            *board.Quota        `json:"quota"`
	ExpectedRevision *int64              `json:"expected_revision"`
}

func (r *putBoardRequest) validate() error {
	if r.Claim == nil {
		return invalidField("claim", "claim is required: {from, to, ttl_ms?, reclaim_to?, max_attempts?, exhausted}")
	}
	return nil
}

// handlePutBoard: PUT /v1/boards/{board} (admin): defines (expected
// revision 0, or If-None-Match: *) or replaces a board's state machine on
// its revision. 201 when created, else 200.
func (s *Server) handlePutBoard(c echo.Context) error {
	bs, name, err := s.boardTarget(c)
	if err != nil {
		return err
	}
	var req putBoardRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	expected, viaHeader, err := requirePrecondition(c.Request(), req.ExpectedRevision, true)
	if err != nil {
		return err
	}
	def := board.Definition{States: req.States, Initial: req.Initial, Transitions: req.Transitions, Claim: *req.Claim, Terminal: req.Terminal}
	if req.Quota != nil {
		def.Quota = *req.Quota
	}
	b, created, err := bs.Define(c.Request().Context(), name, def, expected)
	if err != nil {
		return headerErr(err, viaHeader)
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	c.Response().Header().Set("ETag", strconv.Quote(strconv.FormatInt(b.Revision, 10)))
	return s.send(c, status, boardBody(b))
}

// handleGetBoard: GET /v1/boards/{board}: the board and its machine.
func (s *Server) handleGetBoard(c echo.Context) error {
	bs, name, err := s.boardTarget(c)
	if err != nil {
		return err
	}
	b, err := bs.GetBoard(c.Request().Context(), name)
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", strconv.Quote(strconv.FormatInt(b.Revision, 10)))
	return s.send(c, http.StatusOK, boardBody(b))
}

// handleDeleteBoard: DELETE /v1/boards/{board} (runtime): its creator's
// token or an admin token deletes the board, its definition and its
// records, all of which must be terminal. 204; another token: 403
// forbidden; records not terminal: 409 board_in_use; no such board (or
// deleted already): 404 board_not_found.
func (s *Server) handleDeleteBoard(c echo.Context) error {
	bs, name, err := s.boardTarget(c)
	if err != nil {
		return err
	}
	by := board.Deleter{Name: actorOf(c), Admin: roleOf(c) == RoleAdmin}
	if err := bs.DeleteBoard(c.Request().Context(), name, by); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// createRecordRequest is the body of POST /v1/boards/{board}/records.
type createRecordRequest struct {
	ID        *string         `json:"id"`
	Payload   json.RawMessage `json:"payload"`
	Priority  *int64          `json:"priority"`
	DedupeKey *string         `json:"dedupe_key"`
}

func (r *createRecordRequest) validate() error {
	if r.ID != nil && *r.ID == "" {
		return Errorf(CodeInvalidID, "id: empty; leave it out to have one generated").With("field", "id")
	}
	if r.DedupeKey != nil && *r.DedupeKey == "" {
		return Errorf(CodeInvalidID, "dedupe_key: empty; leave it out for none").With("field", "dedupe_key")
	}
	return nil
}

// handleCreateRecord: POST /v1/boards/{board}/records (runtime,
// Idempotency-Key): 201 with the record in the board's initial state; a
// board that does not exist is created with the default machine. A
// dedupe_key the board remembers, or an id it has: 200 with that record.
func (s *Server) handleCreateRecord(c echo.Context) error {
	bs, name, err := s.boardTarget(c)
	if err != nil {
		return err
	}
	var req createRecordRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	in := board.RecordInput{Payload: req.Payload}
	if req.ID != nil {
		in.ID = *req.ID
	}
	if req.Priority != nil {
		in.Priority = *req.Priority
	}
	if req.DedupeKey != nil {
		in.DedupeKey = *req.DedupeKey
	}
	r, created, err := bs.Create(c.Request().Context(), name, in, recordAnswer(s, c, http.StatusCreated, recordEntity))
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return s.send(c, status, recordBody(r))
}

// handleListRecords: GET /v1/boards/{board}/records?state=&owner=: in
// board order (priority desc, created_at, id), paginated.
func (s *Server) handleListRecords(c echo.Context) error {
	bs, name, err := s.boardTarget(c)
	if err != nil {
		return err
	}
	p, err := pageOf(c)
	if err != nil {
		return err
	}
	f := board.ListFilter{State: c.QueryParam("state"), Owner: c.QueryParam("owner"), Limit: p.Limit, Cursor: p.Cursor}
	if len(f.State) > 64 || len(f.Owner) > 256 {
		return invalidField("state", "state is at most 64 bytes, owner at most 256")
	}
	rs, next, err := bs.List(c.Request().Context(), name, f)
	if err != nil {
		return err
	}
	items := make([]wire.Record, len(rs))
	for i, r := range rs {
		items[i] = recordBody(r)
	}
	return s.send(c, http.StatusOK, list[wire.Record]{Items: items, Next: cursor(next)})
}

// handleGetRecord: GET /v1/boards/{board}/records/{id}; ETag "<revision>".
func (s *Server) handleGetRecord(c echo.Context) error {
	bs, name, id, err := s.recordTarget(c)
	if err != nil {
		return err
	}
	r, err := bs.Get(c.Request().Context(), name, id)
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", strconv.Quote(strconv.FormatInt(r.Revision, 10)))
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return s.send(c, http.StatusOK, recordBody(r))
}

// patchRecordRequest is the body of PATCH /v1/boards/{board}/records/{id}.
type patchRecordRequest struct {
	ExpectedRevision *int64          `json:"expected_revision"`
	State            *string         `json:"state"`
	Payload          json.RawMessage `json:"payload"`
	Fence            *int64          `json:"fence"`
	Merge            *bool           `json:"merge"`
	BasePayload      json.RawMessage `json:"base_payload"`
	Intent           *wire.IntentRef `json:"intent"`
}

// handlePatchRecord: PATCH /v1/boards/{board}/records/{id} (runtime): a
// compare-and-set on the revision (expected_revision or If-Match); a state
// change must be a transition of the board; a claimed record takes only
// writes with its fence before its claim expires.
func (s *Server) handlePatchRecord(c echo.Context) error {
	bs, name, id, err := s.recordTarget(c)
	if err != nil {
		return err
	}
	var req patchRecordRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	expected, viaHeader, err := requirePrecondition(c.Request(), req.ExpectedRevision, false)
	if err != nil {
		return err
	}
	r, err := bs.Patch(c.Request().Context(), name, id, board.Update{ExpectedRevision: expected, State: req.State,
		Payload: req.Payload, Fence: req.Fence, Merge: req.Merge != nil && *req.Merge, BasePayload: req.BasePayload, Intent: intentRef(req.Intent)})
	if err != nil {
		return headerErr(err, viaHeader)
	}
	c.Response().Header().Set("ETag", strconv.Quote(strconv.FormatInt(r.Revision, 10)))
	return s.send(c, http.StatusOK, recordBody(r))
}

// claimRequest is the body of the claim routes.
type claimRequest struct {
	Holder      string `json:"holder"`
	TTLMs       *int64 `json:"ttl_ms"`
	WaitMs      *int64 `json:"wait_ms"`
	MinPriority *int64 `json:"min_priority"`
}

func (r *claimRequest) input() (board.ClaimInput, error) {
	ttl, err := msDuration(r.TTLMs, "ttl_ms", board.MinClaimTTL, board.MaxClaimTTL, 0)
	if err != nil {
		return board.ClaimInput{}, err
	}
	wait, err := msDuration(r.WaitMs, "wait_ms", 0, board.MaxWait, 0)
	if err != nil {
		return board.ClaimInput{}, err
	}
	return board.ClaimInput{Holder: r.Holder, TTL: ttl, Wait: wait, MinPriority: r.MinPriority}, nil
}

// handleClaimNext: POST /v1/boards/{board}/claim (runtime,
// Idempotency-Key): atomically claims the first eligible record in board
// order (reclaiming an expired claim in the same transaction). 200
// {record, fence}; nothing within wait_ms: 204 (never stored for the
// Idempotency-Key); over the board's quota: 429 with Retry-After.
func (s *Server) handleClaimNext(c echo.Context) error {
	bs, name, err := s.boardTarget(c)
	if err != nil {
		return err
	}
	var req claimRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	in, err := req.input()
	if err != nil {
		return err
	}
	s.extendDeadlines(c, in.Wait)
	r, err := bs.ClaimNext(c.Request().Context(), name, in, recordAnswer(s, c, http.StatusOK, claimEntity))
	return s.sendClaim(c, r, err)
}

// handleClaimOne: POST /v1/boards/{board}/records/{id}/claim: the same for
// one record (not eligible: 409 invalid_transition).
func (s *Server) handleClaimOne(c echo.Context) error {
	bs, name, id, err := s.recordTarget(c)
	if err != nil {
		return err
	}
	var req claimRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.WaitMs != nil {
		return invalidField("wait_ms", "claiming one record does not wait")
	}
	in, err := req.input()
	if err != nil {
		return err
	}
	r, err := bs.ClaimOne(c.Request().Context(), name, id, in, recordAnswer(s, c, http.StatusOK, claimEntity))
	return s.sendClaim(c, r, err)
}

func (s *Server) sendClaim(c echo.Context, r *board.Record, err error) error {
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	if r == nil {
		if st := idemOf(c); st != nil {
			st.noStore = true // a 204 depends on timing
		}
		return c.NoContent(http.StatusNoContent)
	}
	return s.send(c, http.StatusOK, claimEntity(r))
}

// heartbeatRequest is the body of POST .../heartbeat.
type heartbeatRequest struct {
	Fence *int64 `json:"fence"`
	TTLMs *int64 `json:"ttl_ms"`
}

// handleHeartbeat: POST /v1/boards/{board}/records/{id}/heartbeat
// (runtime): extends the claim by ttl_ms (default: the claim's) from now
// by the SQL clock; the claim's fence, before it expires.
func (s *Server) handleHeartbeat(c echo.Context) error {
	bs, name, id, err := s.recordTarget(c)
	if err != nil {
		return err
	}
	var req heartbeatRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Fence == nil {
		return invalidField("fence", "fence is required: the claim's fence")
	}
	ttl, err := msDuration(req.TTLMs, "ttl_ms", board.MinClaimTTL, board.MaxClaimTTL, 0)
	if err != nil {
		return err
	}
	r, err := bs.Heartbeat(c.Request().Context(), name, id, *req.Fence, ttl)
	if err != nil {
		return err
	}
	out := wire.Heartbeat{Revision: r.Revision, ClaimTTLMs: r.ClaimTTLMs}
	if r.ClaimExpiresAt != nil {
		out.ClaimExpiresAt = wire.At(*r.ClaimExpiresAt)
	}
	return s.send(c, http.StatusOK, out)
}

// releaseRequest is the body of POST .../release.
type releaseRequest struct {
	Fence *int64 `json:"fence"`
}

// handleReleaseRecord: POST /v1/boards/{board}/records/{id}/release
// (runtime): back to the claim's from state, the fence raised.
func (s *Server) handleReleaseRecord(c echo.Context) error {
	bs, name, id, err := s.recordTarget(c)
	if err != nil {
		return err
	}
	var req releaseRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Fence == nil {
		return invalidField("fence", "fence is required: the claim's fence")
	}
	r, err := bs.Release(c.Request().Context(), name, id, *req.Fence)
	if err != nil {
		return err
	}
	return s.send(c, http.StatusOK, recordBody(r))
}
