package access

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/ident"
	"github.com/promptd/promptd/problem"
	"github.com/promptd/promptd/sqlstore"
)

// Change request states.
const (
	Pending   = "pending"
	Applied   = "applied"
	Failed    = "failed"
	Rejected  = "rejected"
	Expired   = "expired"
	Cancelled = "cancelled"
)

// RequestTTL is how long a change request waits for its approvals.
const RequestTTL = 24 * time.Hour

// MaxApprovals is the most approvals a protection may require.
const MaxApprovals = 10

// Errors of change requests; test with errors.Is or errors.As.
var (
	ErrRequestNotFound = problem.New(problem.ChangeRequestNotFound, "access: no such change request", "no such change request")
	ErrSelfApproval    = problem.New(problem.SelfApproval, "access: a change request is approved by principals other than its requester's",
		"a change request is approved by principals other than its requester's")
	ErrNotApprover = problem.New(problem.Forbidden, "access: the protection names its approvers, and this principal is not one",
		"the protection names its approvers, and this principal is not one")
	ErrAlreadyApproved = problem.New(problem.Forbidden, "access: this principal has approved the change request already",
		"this principal has approved the change request already")
	ErrNotRequester = problem.New(problem.Forbidden, "access: only the requester's principal may cancel a change request",
		"only the requester's principal may cancel a change request")
)

// ClosedError: the change request is no longer pending.
type ClosedError struct{ State string }

func (e *ClosedError) Error() string { return "access: the change request is " + e.State }

// Problem is 409 change_request_closed naming the request's state.
func (e *ClosedError) Problem() *problem.Problem {
	return (&problem.Problem{Code: problem.ChangeRequestClosed, Detail: "the change request is " + e.State + ", no longer pending"}).
		With("state", e.State)
}

// Protection gates writes in an env: Approvals principals other than the
// requester's must approve them; Agents, when set, limits it to those
// agents (patterns); Approvers, when set, names who may approve.
type Protection struct {
	Env       string    `json:"env"`
	Approvals int       `json:"approvals"`
	Agents    []string  `json:"agents"`
	Approvers []string  `json:"approvers"`
	Revision  int64     `json:"revision"`
	UpdatedBy string    `json:"updated_by"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Covers reports whether p gates writes to agent.
func (p *Protection) Covers(agent string) bool {
	if p == nil || p.Approvals == 0 {
		return false
	}
	return p.Agents == nil || (&Scopes{Agents: p.Agents}).Allows(KindAgent, agent)
}

// ChangeRequest is a gated write waiting for approvals. Request is the
// write as received; TargetRevision its precondition.
type ChangeRequest struct {
	ID             string          `json:"id"`
	State          string          `json:"state"`
	Action         string          `json:"action"`
	Agent          string          `json:"agent"`
	Env            string          `json:"env"`
	Request        json.RawMessage `json:"request"`
	TargetRevision int64           `json:"target_revision"`
	RequestedBy    string          `json:"requested_by"`
	RequestedToken string          `json:"requested_token"`
	Approvals      []string        `json:"approvals"`
	Needed         int             `json:"approvals_needed"`
	Approvers      []string        `json:"-"`
	// Command is what approval runs, in the format CommandVersion names
	// (0: none, a request filed before commands were stored; see
	// package changes). Request is only shown.
	Command        json.RawMessage `json:"-"`
	CommandVersion int             `json:"-"`
	Problem        json.RawMessage `json:"problem"`
	Revision       int64           `json:"revision"`
	CreatedAt      time.Time       `json:"created_at"`
	ExpiresAt      time.Time       `json:"expires_at"`
}

// SetProtection creates (expected 0) or changes env's protection at
// expected revision; approvals 0 lifts it.
func (s *Service) SetProtection(ctx context.Context, p Protection, expected *int64, then ...sqlstore.Then[*Protection]) (*Protection, error) {
	return s.setProtection(ctx, p, expected, false, then...)
}

// SetProtectionGated is SetProtection for a write that has not been
// approved: when p weakens the protection in force (WeakenedBy, decided
// against the row as the write's transaction locked it), nothing is
// written and the error is *Gated, with the protection's revision as
// Target.
func (s *Service) SetProtectionGated(ctx context.Context, p Protection, expected *int64, then ...sqlstore.Then[*Protection]) (*Protection, error) {
	return s.setProtection(ctx, p, expected, true, then...)
}

func (s *Service) setProtection(ctx context.Context, p Protection, expected *int64, gated bool, then ...sqlstore.Then[*Protection]) (*Protection, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	now := s.o.Now()
	return sqlstore.Transact(ctx, s.o.DB, func(tx *gorm.DB) (*Protection, error) {
		cur, err := readProtection(tx, p.Env, true)
		if err != nil {
			return nil, err
		}
		var rev int64
		if cur != nil {
			rev = cur.Revision
		}
		if expected != nil && *expected != rev {
			return nil, &problem.RevisionConflictError{Current: rev}
		}
		if gated && cur.WeakenedBy(p) {
			return nil, &Gated{Env: p.Env, Target: rev}
		}
		p.Revision, p.UpdatedBy, p.UpdatedAt = rev+1, audit.Actor(ctx), now.UTC().Truncate(time.Millisecond)
		agents, approvers := jsonOrNull(p.Agents), jsonOrNull(p.Approvers)
		if cur == nil {
			err = tx.Exec(`INSERT INTO access_protections (env, approvals, agents, approvers, revision, updated_by, updated_at_ms) VALUES (?, ?, ?, ?, 1, ?, ?)`,
				p.Env, p.Approvals, agents, approvers, p.UpdatedBy, now.UnixMilli()).Error
			if sqlstore.IsDuplicate(err) {
				return nil, &problem.RevisionConflictError{Current: 1}
			}
		} else {
			res := tx.Exec(`UPDATE access_protections SET approvals = ?, agents = ?, approvers = ?, revision = revision + 1, updated_by = ?, updated_at_ms = ?
				WHERE env = ? AND revision = ?`, p.Approvals, agents, approvers, p.UpdatedBy, now.UnixMilli(), p.Env, rev)
			err = res.Error
			if err == nil && res.RowsAffected != 1 {
				return nil, &problem.RevisionConflictError{Current: rev}
			}
		}
		if err != nil {
			return nil, err
		}
		return &p, s.log.Append(ctx, tx, audit.Event{Action: "protection.set", Env: p.Env, Resource: "protection/" + p.Env}, p)
	}, then...)
}

// Validate checks p's env, approvals, agent patterns and approvers.
func (p *Protection) Validate() error {
	if err := ident.Validate("env", p.Env); err != nil {
		return err
	}
	if p.Approvals < 0 || p.Approvals > MaxApprovals {
		return invalid("approvals", "approvals is 0..%d", MaxApprovals)
	}
	if err := (&Scopes{Agents: p.Agents}).Validate(); err != nil {
		return err
	}
	if len(p.Approvers) > MaxPatterns {
		return invalid("approvers", "at most %d approvers", MaxPatterns)
	}
	return nil
}

// WeakenedBy reports whether next, replacing p, weakens the protection in
// force: fewer approvals (0 lifts it); fewer agents covered (p covers every
// agent and next lists patterns, or next drops one of p's patterns: a
// dropped pattern counts even when another of next's covers the same
// agents, since patterns are compared as written); or any change of who
// may approve (a list added, removed, narrowed or widened). Creating a
// protection, or changing one not in force (approvals 0), never weakens.
func (p *Protection) WeakenedBy(next Protection) bool {
	if p == nil || p.Approvals == 0 {
		return false
	}
	if next.Approvals < p.Approvals {
		return true
	}
	if p.Agents != nil {
		if next.Agents == nil {
			return approversChanged(p.Approvers, next.Approvers)
		}
		for _, a := range p.Agents {
			if !slices.Contains(next.Agents, a) {
				return true
			}
		}
	} else if next.Agents != nil {
		return true
	}
	return approversChanged(p.Approvers, next.Approvers)
}

func approversChanged(cur, next []string) bool {
	a, b := slices.Clone(cur), slices.Clone(next)
	slices.Sort(a)
	slices.Sort(b)
	return !slices.Equal(slices.Compact(a), slices.Compact(b))
}

// Protection is env's protection, or nil.
func (s *Service) Protection(ctx context.Context, env string) (*Protection, error) {
	p, err := readProtection(s.o.DB.WithContext(ctx), env, false)
	return p, sqlstore.Translate(err)
}

func readProtection(tx *gorm.DB, env string, lock bool) (*Protection, error) {
	q := `SELECT env, approvals, agents, approvers, revision, updated_by, updated_at_ms FROM access_protections WHERE env = ?`
	if lock {
		q += sqlstore.ForUpdate(tx)
	}
	var rs []struct {
		Env, Agents, Approvers, UpdatedBy string
		Approvals                         int
		Revision, UpdatedAtMs             int64
	}
	if err := tx.Raw(q, env).Scan(&rs).Error; err != nil || len(rs) == 0 {
		return nil, err
	}
	r := rs[0]
	p := &Protection{Env: r.Env, Approvals: r.Approvals, Revision: r.Revision, UpdatedBy: r.UpdatedBy, UpdatedAt: time.UnixMilli(r.UpdatedAtMs).UTC()}
	_ = json.Unmarshal([]byte(r.Agents), &p.Agents)
	_ = json.Unmarshal([]byte(r.Approvers), &p.Approvers)
	return p, nil
}

func jsonOrNull(v []string) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Filing is a gated write to file as a change request.
type Filing struct {
	Action     string // "pointer.switch", ...
	Agent, Env string // Agent "": a write to the env itself (its protection)
	// Request is the write as its requester sent it: what the request's
	// answers show (its "request" member).
	Request any
	// Command is what approval runs, and CommandVersion its format (the
	// caller's: package changes).
	Command        any
	CommandVersion int
	// Target is the write's precondition: the revision of its target as
	// the write's transaction read it under lock.
	Target int64
}

// Gate returns a new pending change request for f when env's protection
// covers it, or nil when the write may go ahead. Agent "" is a write to
// the env itself (its protection): gated whenever env's protection is in
// force.
//
// The protection is read under lock in the transaction that inserts the
// change request; a failed read refuses. Writes decide "gated or not"
// inside their own transaction (CheckGate) and call Gate when it says
// *Gated; Gate answering nil then means the protection was lifted in
// between, and the write is tried again.
//
// then runs in the transaction that files the request, after it (an
// Idempotency-Key's record of the answer, so that a retry after a lost
// answer finds the request instead of filing a second one).
func (s *Service) Gate(ctx context.Context, by *Token, f Filing, then ...sqlstore.Then[*ChangeRequest]) (*ChangeRequest, error) {
	raw, err := json.Marshal(f.Request)
	if err != nil {
		return nil, err
	}
	command, err := json.Marshal(f.Command)
	if err != nil {
		return nil, err
	}
	action, agent, env, target := f.Action, f.Agent, f.Env, f.Target
	cr, err := sqlstore.Transact(ctx, s.o.DB, func(tx *gorm.DB) (*ChangeRequest, error) {
		p, err := readProtection(tx, env, true)
		if err != nil {
			return nil, err
		}
		if p == nil || p.Approvals == 0 || agent != "" && !p.Covers(agent) {
			return nil, errNotCovered // rolls back: nothing was written
		}
		now := s.o.Now().UTC().Truncate(time.Millisecond)
		cr := &ChangeRequest{ID: "cr_" + newID()[len(idPrefix):], State: Pending, Action: action, Agent: agent, Env: env, Request: raw,
			TargetRevision: target, RequestedBy: principalOf(by), RequestedToken: by.Name, Approvals: []string{}, Needed: p.Approvals,
			Approvers: p.Approvers, Command: command, CommandVersion: f.CommandVersion, Problem: json.RawMessage("null"), Revision: 1,
			CreatedAt: now, ExpiresAt: now.Add(RequestTTL)}
		if err := tx.Exec(`INSERT INTO access_change_requests (cr_id, action, agent, env, request, target_revision, requested_by, requested_token,
			state, approvals, needed, approvers, problem, revision, created_at_ms, expires_at_ms, updated_at_ms, command, command_version)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?)`,
			cr.ID, action, agent, env, string(raw), target, cr.RequestedBy, cr.RequestedToken, Pending, "[]", cr.Needed,
			jsonOrNull(cr.Approvers), "null", now.UnixMilli(), cr.ExpiresAt.UnixMilli(), now.UnixMilli(), string(command), f.CommandVersion).Error; err != nil {
			return nil, err
		}
		return cr, s.crAudit(ctx, tx, "change_request.created", cr)
	}, then...)
	if errors.Is(err, errNotCovered) {
		return nil, nil
	}
	return cr, err
}

var errNotCovered = errors.New("access: the protection does not cover the write")

func principalOf(t *Token) string {
	if t.Principal != "" {
		return t.Principal
	}
	return t.Name
}

func (s *Service) crAudit(ctx context.Context, tx *gorm.DB, action string, cr *ChangeRequest) error {
	return s.log.Append(ctx, tx, audit.Event{Action: action, Agent: cr.Agent, Env: cr.Env, Resource: "change_request/" + cr.ID},
		map[string]any{"id": cr.ID, "action": cr.Action, "state": cr.State, "target_revision": cr.TargetRevision,
			"requested_by": cr.RequestedBy, "approvals": cr.Approvals, "problem": cr.Problem, "revision": cr.Revision})
}

const crCols = `cr_id, action, agent, env, request, target_revision, requested_by, requested_token, state, approvals, needed, approvers, problem, revision, created_at_ms, expires_at_ms, command, command_version`

type crRow struct {
	ID                                                                    int64
	CrID, Action, Agent, Env, Request, RequestedBy, RequestedToken, State string
	Approvals, Approvers, Problem                                         string
	TargetRevision, Revision, CreatedAtMs, ExpiresAtMs                    int64
	Needed, CommandVersion                                                int
	Command                                                               *string
}

func (r *crRow) request(now time.Time) *ChangeRequest {
	cr := &ChangeRequest{ID: r.CrID, State: r.State, Action: r.Action, Agent: r.Agent, Env: r.Env, Request: json.RawMessage(r.Request),
		TargetRevision: r.TargetRevision, RequestedBy: r.RequestedBy, RequestedToken: r.RequestedToken, Needed: r.Needed,
		Problem: json.RawMessage(r.Problem), Revision: r.Revision, CreatedAt: time.UnixMilli(r.CreatedAtMs).UTC(), ExpiresAt: time.UnixMilli(r.ExpiresAtMs).UTC(),
		CommandVersion: r.CommandVersion}
	if r.Command != nil {
		cr.Command = json.RawMessage(*r.Command)
	}
	_ = json.Unmarshal([]byte(r.Approvals), &cr.Approvals)
	_ = json.Unmarshal([]byte(r.Approvers), &cr.Approvers)
	if cr.Approvals == nil {
		cr.Approvals = []string{}
	}
	if cr.State == Pending && !now.Before(cr.ExpiresAt) {
		cr.State = Expired // read lazily; the sweep writes it
	}
	return cr
}

func (s *Service) readRequest(tx *gorm.DB, id string, lock bool) (*ChangeRequest, error) {
	q := `SELECT ` + crCols + ` FROM access_change_requests WHERE cr_id = ?`
	if lock {
		q += sqlstore.ForUpdate(tx)
	}
	var rs []crRow
	if err := tx.Raw(q, id).Scan(&rs).Error; err != nil {
		return nil, sqlstore.Translate(err)
	}
	if len(rs) == 0 {
		return nil, ErrRequestNotFound
	}
	return rs[0].request(s.o.Now()), nil
}

// ChangeRequest returns the change request id.
func (s *Service) ChangeRequest(ctx context.Context, id string) (*ChangeRequest, error) {
	return s.readRequest(s.o.DB.WithContext(ctx), id, false)
}

// ListFilter selects change requests. Scope (a scoped token's; nil:
// unscoped) limits the list in its query, before the page's limit, to the
// requests it may see: each of agent and env "" or in the scope, not both
// "".
type ListFilter struct {
	State, Agent, Env string
	Cursor            int64
	Limit             int
	Scope             *Scopes
}

// ChangeRequests lists change requests newest first and the next cursor.
func (s *Service) ChangeRequests(ctx context.Context, f ListFilter) ([]*ChangeRequest, int64, error) {
	q := s.o.DB.WithContext(ctx).Table("access_change_requests").Select("id, " + crCols)
	if !f.Scope.Unscoped() {
		cond, args, none := sqlstore.Named(sqlstore.Column{Col: "agent", Names: f.Scope.Names(KindAgent)},
			sqlstore.Column{Col: "env", Names: f.Scope.Names(KindEnv)})
		if none {
			return []*ChangeRequest{}, 0, nil
		}
		q = q.Where(cond, args...)
	}
	if f.Cursor > 0 {
		q = q.Where("id < ?", f.Cursor)
	}
	for col, v := range map[string]string{"agent": f.Agent, "env": f.Env} {
		if v != "" {
			q = q.Where(col+" = ?", v)
		}
	}
	now := s.o.Now()
	switch f.State {
	case "":
	case Pending:
		q = q.Where("state = ? AND expires_at_ms > ?", Pending, now.UnixMilli())
	case Expired:
		q = q.Where("state = ? OR (state = ? AND expires_at_ms <= ?)", Expired, Pending, now.UnixMilli())
	default:
		q = q.Where("state = ?", f.State)
	}
	var rs []crRow
	if err := q.Order("id DESC").Limit(f.Limit + 1).Scan(&rs).Error; err != nil {
		return nil, 0, sqlstore.Translate(err)
	}
	var next int64
	if len(rs) > f.Limit {
		rs = rs[:f.Limit]
		next = rs[len(rs)-1].ID
	}
	out := make([]*ChangeRequest, len(rs))
	for i := range rs {
		out[i] = rs[i].request(now)
	}
	return out, next, nil
}

// Applier applies an approved change request's write: it runs the write
// with its original precondition (cr.TargetRevision) and calls commit
// within the write's own transaction, before it commits, so that the
// request is marked applied in the same transaction (revision-checked on
// the request row: it applies once). A returned error other than commit's
// is the write's problem: the request is marked failed with it.
type Applier func(ctx context.Context, cr *ChangeRequest, commit func(tx *gorm.DB) error) error

// ErrCommitRace: the request row changed between the approval's read and
// its apply (another approval); nothing was applied, retry.
var ErrCommitRace = errors.New("access: the change request changed meanwhile; retry")

// Approve records by's approval of id. The approval completing the count
// applies the change through apply, in the write's transaction; a write
// that fails (its target moved) marks the request failed, with the
// problem it is answered with (problem.Of).
func (s *Service) Approve(ctx context.Context, id string, by *Token, apply Applier) (*ChangeRequest, error) {
	cr, err := s.ChangeRequest(ctx, id)
	if err != nil {
		return nil, err
	}
	who := principalOf(by)
	switch {
	case cr.State != Pending:
		return nil, &ClosedError{State: cr.State}
	case who == cr.RequestedBy:
		return nil, ErrSelfApproval
	case len(cr.Approvers) > 0 && !slices.Contains(cr.Approvers, who):
		return nil, ErrNotApprover
	case slices.Contains(cr.Approvals, who):
		return nil, ErrAlreadyApproved
	}
	approvals := append(slices.Clone(cr.Approvals), who)
	next := *cr
	next.Approvals, next.Revision = approvals, cr.Revision+1
	p, err := s.Protection(ctx, cr.Env)
	if err != nil {
		return nil, err // the count it must reach is unknown: refuse
	}
	next.Needed = neededNow(cr, p)
	if len(approvals) < next.Needed {
		return s.moveRequest(ctx, cr, &next, "change_request.approved")
	}
	next.State = Applied
	commit := func(tx *gorm.DB) error {
		// The count is checked again against the protection as the
		// write's transaction locks it: one raised meanwhile holds the
		// request until it has as many approvals.
		p, err := readProtection(tx, cr.Env, true)
		if err != nil {
			return err
		}
		if need := neededNow(cr, p); len(approvals) < need {
			return &moreNeeded{need: need}
		}
		if err := s.casRequest(ctx, tx, cr, &next); err != nil {
			return err
		}
		return s.crAudit(ctx, tx, "change_request.applied", &next)
	}
	err = apply(ctx, cr, commit)
	var more *moreNeeded
	switch {
	case err == nil:
		return &next, nil
	case errors.As(err, &more):
		next.State, next.Needed = Pending, more.need
		return s.moveRequest(ctx, cr, &next, "change_request.approved")
	case errors.Is(err, ErrCommitRace):
		cur, rerr := s.ChangeRequest(ctx, id)
		if rerr != nil {
			return nil, rerr
		}
		if cur.State != Pending {
			return nil, &ClosedError{State: cur.State}
		}
		return nil, &problem.RevisionConflictError{Current: cur.Revision}
	case sqlstore.IsUnavailable(err):
		return nil, err
	}
	// The write failed: mark the request failed (once), unless another
	// approval closed it meanwhile.
	raw, _ := json.Marshal(problem.Of(err).Summary())
	next.State, next.Problem = Failed, raw
	if _, ferr := s.moveRequest(ctx, cr, &next, "change_request.failed"); ferr != nil {
		if errors.Is(ferr, ErrCommitRace) {
			if cur, rerr := s.ChangeRequest(ctx, id); rerr == nil && cur.State != Pending {
				return nil, &ClosedError{State: cur.State}
			}
		}
		return nil, ferr
	}
	return &next, nil
}

// neededNow is how many approvals cr needs with p the protection in
// force now: the count it was filed with, or more when the protection was
// raised since (lowering or lifting it never lowers the count).
func neededNow(cr *ChangeRequest, p *Protection) int {
	if p != nil && (cr.Agent == "" || p.Covers(cr.Agent)) && p.Approvals > cr.Needed {
		return p.Approvals
	}
	return cr.Needed
}

// moreNeeded: the protection was raised while the last approval applied.
type moreNeeded struct{ need int }

func (e *moreNeeded) Error() string {
	return fmt.Sprintf("access: the protection now needs %d approvals", e.need)
}

// Reject closes a pending request without applying it.
func (s *Service) Reject(ctx context.Context, id string, by *Token) (*ChangeRequest, error) {
	return s.close(ctx, id, by, Rejected, false)
}

// Cancel closes a pending request; only its requester's principal may.
func (s *Service) Cancel(ctx context.Context, id string, by *Token) (*ChangeRequest, error) {
	return s.close(ctx, id, by, Cancelled, true)
}

func (s *Service) close(ctx context.Context, id string, by *Token, state string, requester bool) (*ChangeRequest, error) {
	cr, err := s.ChangeRequest(ctx, id)
	if err != nil {
		return nil, err
	}
	if cr.State != Pending {
		return nil, &ClosedError{State: cr.State}
	}
	if requester && principalOf(by) != cr.RequestedBy {
		return nil, ErrNotRequester
	}
	next := *cr
	next.State, next.Revision = state, cr.Revision+1
	out, err := s.moveRequest(ctx, cr, &next, "change_request."+state)
	if errors.Is(err, ErrCommitRace) {
		if cur, rerr := s.ChangeRequest(ctx, id); rerr == nil && cur.State != Pending {
			return nil, &ClosedError{State: cur.State}
		}
	}
	return out, err
}

// moveRequest writes next over cur (revision-checked) with its audit event.
func (s *Service) moveRequest(ctx context.Context, cur, next *ChangeRequest, action string) (*ChangeRequest, error) {
	return sqlstore.Transact(ctx, s.o.DB, func(tx *gorm.DB) (*ChangeRequest, error) {
		if err := s.casRequest(ctx, tx, cur, next); err != nil {
			return nil, err
		}
		return next, s.crAudit(ctx, tx, action, next)
	})
}

// casRequest updates the request row from cur to next iff it is still
// pending at cur's revision and not expired.
func (s *Service) casRequest(_ context.Context, tx *gorm.DB, cur, next *ChangeRequest) error {
	now := s.o.Now().UnixMilli()
	res := tx.Exec(`UPDATE access_change_requests SET state = ?, approvals = ?, needed = ?, problem = ?, revision = ?, updated_at_ms = ?
		WHERE cr_id = ? AND revision = ? AND state = ? AND expires_at_ms > ?`,
		next.State, jsonOrNull(next.Approvals), next.Needed, string(next.Problem), next.Revision, now, cur.ID, cur.Revision, Pending, now)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected != 1 {
		return ErrCommitRace
	}
	return nil
}

// ExpireRequests marks up to 500 pending requests past their expiry
// expired, each with its change_request.expired event (the sweep job;
// reads already show them expired); it returns how many.
func (s *Service) ExpireRequests(ctx context.Context) (int, error) {
	now := s.o.Now()
	var rs []crRow
	if err := s.o.DB.WithContext(ctx).Raw(`SELECT id, `+crCols+` FROM access_change_requests WHERE state = ? AND expires_at_ms <= ? ORDER BY id LIMIT 500`,
		Pending, now.UnixMilli()).Scan(&rs).Error; err != nil {
		return 0, sqlstore.Translate(err)
	}
	n := 0
	for i := range rs {
		cur := rs[i].request(now)
		cur.State = Pending // as stored
		next := *cur
		next.State, next.Revision = Expired, cur.Revision+1
		_, err := sqlstore.Transact(ctx, s.o.DB, func(tx *gorm.DB) (struct{}, error) {
			res := tx.Exec(`UPDATE access_change_requests SET state = ?, revision = ?, updated_at_ms = ? WHERE cr_id = ? AND revision = ? AND state = ?`,
				Expired, next.Revision, now.UnixMilli(), cur.ID, cur.Revision, Pending)
			if res.Error != nil || res.RowsAffected != 1 {
				return struct{}{}, res.Error
			}
			n++
			return struct{}{}, s.crAudit(ctx, tx, "change_request.expired", &next)
		})
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// ConvertCommands gives each pending change request of tx that stores no
// command (CommandVersion 0: filed before commands were stored) the
// command convert makes of its action and stored request, in the format
// convert returns. A request convert cannot read is marked failed with
// its problem (problem.Of), so that it is never approved into something
// else. It
// returns how many requests it converted and failed. It is a migration's
// step: tx is the migration's transaction.
func ConvertCommands(tx *gorm.DB, convert func(action string, request json.RawMessage) (command any, version int, err error)) (converted, failed int, err error) {
	var rs []crRow
	if err := tx.Raw(`SELECT id, `+crCols+` FROM access_change_requests WHERE state = ? AND command_version = 0 ORDER BY id`, Pending).
		Scan(&rs).Error; err != nil {
		return 0, 0, err
	}
	for _, r := range rs {
		cmd, version, cerr := convert(r.Action, json.RawMessage(r.Request))
		var raw []byte
		if cerr == nil {
			raw, cerr = json.Marshal(cmd)
		}
		if cerr != nil {
			p, err := json.Marshal(problem.Of(cerr).Summary())
			if err != nil {
				return converted, failed, err
			}
			if err := tx.Exec(`UPDATE access_change_requests SET state = ?, problem = ?, revision = revision + 1 WHERE id = ?`,
				Failed, string(p), r.ID).Error; err != nil {
				return converted, failed, err
			}
			failed++
			continue
		}
		if err := tx.Exec(`UPDATE access_change_requests SET command = ?, command_version = ? WHERE id = ?`, string(raw), version, r.ID).Error; err != nil {
			return converted, failed, err
		}
		converted++
	}
	return converted, failed, nil
}
