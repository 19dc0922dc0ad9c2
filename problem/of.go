package problem

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/api/idempotency"
	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/board"
	"github.com/promptd/promptd/events"
	"github.com/promptd/promptd/ident"
	"github.com/promptd/promptd/leases"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/session"
	"github.com/promptd/promptd/sqlstore"
	"github.com/promptd/promptd/webhook"
)

// Of maps any error a promptd package returns to the Problem it is
// answered with: the one place where domain errors get their codes. A
// *Problem (even wrapping a domain error) keeps its own code; an error
// this does not know is internal, which the caller logs.
func Of(err error) *Problem {
	var (
		p        *Problem
		tooLarge *http.MaxBytesError
		invalid  *ident.InvalidError
		bad      *promptstore.InvalidError
		rejected *promptstore.ImportRejected
		vc       *promptstore.VersionConflict
		rc       *promptstore.RevisionConflict
		ra       *promptstore.ReleaseActive
		limit    *promptstore.LimitError
		header   fromHeader
		expired  *events.CursorExpiredError
		ahead    *audit.AheadError
		trans    *release.InvalidTransition
		sf       *locks.StaleFenceError
		lh       *session.LeaseHeld
		hr       *leases.HeldError
		held     *locks.HeldError
		lost     *leases.LostError
		lq       *leases.QuotaError
		btrans   *board.InvalidTransition
		bsf      *board.StaleFence
		cl       *board.Claimed
		ce       *board.ClaimExpired
		inUse    *board.InUse
		open     *board.OpenRecords
		nc       *board.NotCreator
		quota    *board.QuotaExceeded
		ue       *webhook.URLError
		bundle   *release.BundleTooLarge
		closed   *access.ClosedError
		wider    *access.WiderError
	)
	switch {
	case errors.As(err, &p):
		return p

	// Releases, sessions and leases.
	case errors.As(err, &lq):
		return (&Problem{Code: "quota_exceeded", Err: err, Detail: fmt.Sprintf(
			"this token holds %d live generic leases, the limit; release one or retry when one expires", lq.Limit)}).
			With("limit", lq.Limit).WithHeader("Retry-After", RetryAfter(lq.RetryAfter))
	case errors.As(err, &trans):
		return (&Problem{Code: "invalid_transition", Err: err, Detail: fmt.Sprintf("a release that is %s cannot %s", trans.State, trans.Action)}).
			With("state", string(trans.State))
	case errors.Is(err, release.ErrNotFound):
		return &Problem{Code: "release_not_found", Detail: "no such release", Err: err}
	case errors.As(err, &sf):
		return (&Problem{Code: "stale_fence", Err: err, Detail: fmt.Sprintf(
			"fence %d is not the session's current fence %d: the lease was taken over", sf.Fence, sf.Current)}).With("current_fence", sf.Current)
	case errors.As(err, &lh):
		return leaseHeld(err, lh.Holder, lh.ExpiresAt)
	case errors.As(err, &hr) && len(hr.Conflicts) > 0:
		p := leaseHeld(err, hr.Conflicts[0].Holder, hr.Conflicts[0].ExpiresAt)
		conflicts := make([]map[string]any, len(hr.Conflicts))
		for i, c := range hr.Conflicts {
			conflicts[i] = map[string]any{"resource": c.Resource, "holder": c.Holder, "expires_at": Timestamp(c.ExpiresAt)}
		}
		return p.With("conflicts", conflicts)
	case errors.As(err, &held) && len(held.Conflicts) > 0:
		return leaseHeld(err, held.Conflicts[0].Holder, held.Conflicts[0].ExpiresAt)
	case errors.As(err, &lost):
		return (&Problem{Code: "lease_lost", Err: err, Detail: "the lease no longer holds some of its resources (expired or taken over)"}).
			With("resources", lost.Resources)
	case errors.Is(err, leases.ErrNotFound):
		return &Problem{Code: "lease_not_found", Detail: "no such lease: a lease_id is the one POST /v1/leases answered", Err: err}
	case errors.Is(err, session.ErrLeaseLost):
		return &Problem{Code: "lease_lost", Detail: "the token is not the lease's current token (expired, released or taken over)", Err: err}
	case errors.Is(err, session.ErrNotFound):
		return &Problem{Code: SessionNotFound, Detail: "no such session", Err: err}
	case errors.Is(err, session.ErrClosed):
		return (&Problem{Code: "session_closed", Detail: "the session is closed", Err: err}).With("state", session.Closed)
	case errors.Is(err, session.ErrExists):
		return &Problem{Code: "session_exists", Err: err,
			Detail: "a session with this id exists for another agent, env or user, or is closed"}
	case errors.Is(err, session.ErrMismatch):
		return &Problem{Code: "session_mismatch", Detail: "the session belongs to another agent or env", Err: err}

	// Boards.
	case errors.Is(err, board.ErrBoardNotFound):
		return &Problem{Code: "board_not_found", Detail: "no such board", Err: err}
	case errors.Is(err, board.ErrRecordNotFound):
		return &Problem{Code: "record_not_found", Detail: "no such record on the board", Err: err}
	case errors.As(err, &btrans):
		d := fmt.Sprintf("a record in state %s cannot move to %s", btrans.State, btrans.To)
		if btrans.To == "" {
			d = fmt.Sprintf("a record in state %s cannot be written", btrans.State)
		}
		return (&Problem{Code: "invalid_transition", Detail: d, Err: err}).With("state", btrans.State)
	case errors.As(err, &bsf):
		return (&Problem{Code: "stale_fence", Err: err, Detail: fmt.Sprintf(
			"fence %d is not the record's current fence %d: the claim was released, reclaimed or taken", bsf.Fence, bsf.Current)}).
			With("current_fence", bsf.Current)
	case errors.As(err, &cl):
		return (&Problem{Code: "claimed", Err: err, Detail: fmt.Sprintf("the record is claimed by %q; writes carry its fence", cl.Owner)}).
			With("owner", cl.Owner).With("claim_expires_at", Timestamp(cl.ExpiresAt))
	case errors.As(err, &ce):
		return (&Problem{Code: "claim_expired", Err: err, Detail: "the claim expired before this write; claim the record again"}).
			With("claim_expires_at", Timestamp(ce.ExpiresAt))
	case errors.As(err, &inUse):
		return (&Problem{Code: "board_in_use", Err: err, Detail: "records are in states the new definition removes"}).
			With("states", inUse.States)
	case errors.As(err, &open):
		return (&Problem{Code: "board_in_use", Err: err, Detail: fmt.Sprintf(
			"%d records of the board are not in a terminal state; finish or cancel them first", open.Open)}).With("open_records", open.Open)
	case errors.As(err, &nc):
		return (&Problem{Code: Forbidden, Err: err, Detail: "only the token that created the board, or an admin token, may delete it"}).
			With("created_by", nc.CreatedBy)
	case errors.As(err, &quota):
		return (&Problem{Code: "quota_exceeded", Err: err, Detail: fmt.Sprintf("over the board's %s limit (%d); retry later", quota.What, quota.Limit)}).
			With("limit", quota.Limit).WithHeader("Retry-After", RetryAfter(quota.RetryAfter))

	// Webhooks.
	case errors.As(err, &ue):
		return (&Problem{Code: "invalid_url", Detail: ue.Detail, Err: err}).With("field", "url").With("reason", ue.Reason)
	case errors.Is(err, webhook.ErrNotFound):
		return &Problem{Code: "webhook_not_found", Detail: "no such webhook", Err: err}
	case errors.Is(err, webhook.ErrDeliveryNotFound):
		return &Problem{Code: "delivery_not_found", Detail: "no such delivery of this webhook", Err: err}
	case errors.Is(err, webhook.ErrNoSecretKey):
		return &Problem{Code: "secret_key_required", Err: err,
			Detail: "webhooks need PROMPTD_SECRET_KEY (32 bytes, base64) to store their secrets encrypted; nothing was changed"}

	// Bundles.
	case errors.As(err, &bundle):
		return (&Problem{Code: "bundle_too_large", Err: err,
			Detail: fmt.Sprintf("the bundle is larger than %d bytes; ask for fewer agents or envs", bundle.Limit)}).With("limit", bundle.Limit)

	// Protections, change requests and tokens.
	case errors.As(err, &closed):
		return (&Problem{Code: "change_request_closed", Detail: "the change request is " + closed.State + ", no longer pending", Err: err}).
			With("state", closed.State)
	case errors.Is(err, access.ErrRequestNotFound):
		return &Problem{Code: "change_request_not_found", Detail: "no such change request", Err: err}
	case errors.Is(err, access.ErrSelfApproval):
		return &Problem{Code: "self_approval", Detail: "a change request is approved by principals other than its requester's", Err: err}
	case errors.Is(err, access.ErrNotApprover), errors.Is(err, access.ErrAlreadyApproved), errors.Is(err, access.ErrNotRequester):
		return &Problem{Code: Forbidden, Detail: err.Error()[len("access: "):], Err: err}
	case errors.As(err, &wider):
		return OutOfScope(wider.Scope, "a token may not be wider than its creator: its "+wider.Scope+" would be")
	case errors.Is(err, access.ErrNotFound):
		return &Problem{Code: "token_not_found", Detail: "no such managed token", Err: err}
	case errors.Is(err, access.ErrExists):
		return &Problem{Code: "token_exists", Detail: "a token with this name exists or existed; names are never reused", Err: err}
	case errors.Is(err, access.ErrBootstrap):
		return &Problem{Code: "token_bootstrap", Detail: "a PROMPTD_TOKENS token is revoked by removing it from the configuration", Err: err}
	case errors.Is(err, access.ErrUnavailable):
		return (&Problem{Code: StoreUnavailable, Detail: "the database cannot confirm this token; retry later", Err: err}).
			With("store", "sql").WithHeader("Retry-After", "1")

	// Requests, prompts and stores.
	case errors.As(err, &tooLarge):
		return (&Problem{Code: BodyTooLarge, Err: err,
			Detail: fmt.Sprintf("the request body is larger than %d bytes", tooLarge.Limit)}).With("limit", tooLarge.Limit)
	case errors.As(err, &invalid):
		return (&Problem{Code: InvalidID, Detail: fmt.Sprintf("%s: %s", invalid.Field, invalid.Reason), Err: err}).With("field", invalid.Field)
	case errors.As(err, &bad):
		p := &Problem{Code: bad.Code, Detail: bad.Detail, Err: err}
		if bad.Field != "" {
			p.With("field", bad.Field)
		}
		if bad.Variable != "" {
			p.With("variable", bad.Variable)
		}
		return p
	case errors.As(err, &rejected):
		r := rejected.Result
		return (&Problem{Code: "import_rejected", Err: err, Detail: fmt.Sprintf(
			"all_or_nothing: %d conflict and %d invalid items; nothing was written", r.Summary.Conflict, r.Summary.Invalid)}).
			With("batch_fingerprint", r.BatchFingerprint).With("results", r.Results).With("summary", r.Summary)
	case errors.As(err, &vc):
		return (&Problem{Code: "version_conflict", Err: err, Detail: fmt.Sprintf(
			"base_version %d is not the latest version of %s (%d)", vc.Base, vc.Agent, vc.Latest)}).With("latest_version", vc.Latest)
	case errors.As(err, &rc) && errors.As(err, &header):
		return (&Problem{Code: PreconditionFailed, Err: err, Detail: fmt.Sprintf(
			"If-Match names another revision; the current revision is %d", rc.Current)}).With("current_revision", rc.Current)
	case errors.As(err, &rc):
		return (&Problem{Code: "revision_conflict", Err: err, Detail: fmt.Sprintf(
			"expected_revision is not the current revision (%d); re-read and retry", rc.Current)}).With("current_revision", rc.Current)
	case errors.As(err, &ra):
		return (&Problem{Code: "release_active", Err: err, Detail: fmt.Sprintf(
			"release %s is active; the pointer moves only through it", ra.ReleaseID)}).With("release_id", ra.ReleaseID)
	case errors.As(err, &limit):
		return (&Problem{Code: LimitExceeded, Err: err, Detail: limitDetail(limit)}).
			With("field", limit.Name).With("limit", limit.Limit)
	case errors.Is(err, promptstore.ErrAgentNotFound):
		return &Problem{Code: "agent_not_found", Detail: "no such agent", Err: err}
	case errors.Is(err, promptstore.ErrVersionNotFound):
		return &Problem{Code: "version_not_found", Detail: "no such version of the agent", Err: err}
	case errors.Is(err, promptstore.ErrNoPointer):
		return &Problem{Code: "no_pointer", Detail: "the env has no pointer yet: no version was published to it", Err: err}
	case errors.Is(err, promptstore.ErrVersionRevoked):
		return &Problem{Code: "version_revoked", Detail: "the version is revoked in this env", Err: err}
	case errors.Is(err, promptstore.ErrVersionCurrent):
		return &Problem{Code: "version_current", Detail: "the version is the one the env pointer names; move the pointer first", Err: err}
	case errors.Is(err, promptstore.ErrPreconditionRequired):
		return &Problem{Code: PreconditionRequired, Err: err,
			Detail: `send expected_revision in the body or If-Match: "<revision>" (expected_revision 0 or If-None-Match: * creates the pointer)`}
	case errors.Is(err, idempotency.ErrKeyReused):
		return (&Problem{Code: IdempotencyReused, Err: err,
			Detail: "this Idempotency-Key was used with another request body"}).With("field", "Idempotency-Key")
	case errors.Is(err, idempotency.ErrInProgress):
		return &Problem{Code: IdempotencyBusy, Err: err, Detail: "a request with this Idempotency-Key is still in progress; retry shortly"}
	case errors.Is(err, promptstore.ErrUnavailable), errors.Is(err, sqlstore.ErrUnavailable):
		return (&Problem{Code: StoreUnavailable, Detail: "the database is unavailable; nothing was changed; retry later", Err: err}).
			With("store", "sql").WithHeader("Retry-After", "1")
	case errors.Is(err, locks.ErrUnavailable):
		return (&Problem{Code: StoreUnavailable, Detail: "the lock store is unavailable; retry later", Err: err}).
			With("store", "redis").WithHeader("Retry-After", "1")
	case errors.Is(err, locks.ErrTooManyWaiters):
		return (&Problem{Code: "quota_exceeded", Detail: "too many lease requests are waiting on this instance; retry later", Err: err}).
			WithHeader("Retry-After", "1")
	case errors.As(err, &expired):
		return (&Problem{Code: "cursor_expired", Err: err, Detail: fmt.Sprintf(
			"the feed no longer keeps events after this position; resume from %d (or since=0)", expired.Oldest)}).With("oldest", strconv.FormatInt(expired.Oldest, 10))
	case errors.As(err, &ahead): // a position checked at the start, then the store went back
		return (&Problem{Code: StoreUnavailable, Err: err, Detail: fmt.Sprintf(
			"the feed's store is behind position %d (its head is %d); retry later", ahead.After, ahead.Head)}).
			With("store", "sql").WithHeader("Retry-After", "1")
	}
	return &Problem{Code: Internal, Detail: "an unexpected error occurred", Err: err}
}

// limitDetail says which limit a request would pass.
func limitDetail(l *promptstore.LimitError) string {
	what := map[string]string{
		session.LimitTurns:              "the session would hold more than %d turns; nothing was written",
		session.LimitBytes:              "the session's turns and state entries would take more than %d bytes; nothing was written",
		session.LimitStateKeys:          "the session would hold more than %d state entries; nothing was written",
		session.LimitStateBytes:         "the state entries take more than %d bytes in one answer; ask for fewer with ?keys=",
		promptstore.LimitAssembledBytes: "the assembled answer would take more than %d bytes",
		promptstore.LimitDiffBytes:      "the two configs take more than %d bytes together, too large to diff",
		promptstore.LimitDiffLines:      "the two configs have more than %d lines together, too many to diff",
		board.LimitBoardsPerToken:       "this token created %d boards, its limit; delete one it no longer uses (empty boards also expire)",
		board.LimitBoards:               "the server holds %d boards, its limit; delete boards no longer used (empty boards also expire)",
	}[l.Name]
	if what == "" {
		what = l.Name + " is limited to %d"
	}
	return fmt.Sprintf(what, l.Limit)
}

// leaseHeld is 423 lease_held naming the holder and when its lease
// expires (when known).
func leaseHeld(err error, holder string, expires time.Time) *Problem {
	p := &Problem{Code: "lease_held", Detail: "the lease is held by another holder", Err: err}
	if holder != "" {
		p.Detail = fmt.Sprintf("the lease is held by %q", holder)
		p.With("holder", holder)
	}
	if !expires.IsZero() {
		p.With("expires_at", Timestamp(expires))
	}
	return p
}
