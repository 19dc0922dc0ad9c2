package client

import (
	"context"
	"net/http"
	"time"

	"github.com/promptd/promptd/wire"
)

// The codes of the intent routes (api/openapi.yaml "Intents"). A renew, a
// release or a write under an intent that ended, or with another fence, is
// ErrStaleFence (IntentID, State, CurrentFence, EndedAt).
const (
	ErrIntentNotFound Code = "intent_not_found"
	ErrIntentConflict Code = "intent_conflict" // 409: the scope overlaps live intents (IntentConflicts)
	ErrOutsideIntent  Code = "outside_intent"  // 422: a write under an intent touched what its scope does not cover (IntentID, Field)
)

// Intent modes: an exclusive intent overlaps no other live intent; an
// advisory one overlaps no live exclusive one.
const (
	IntentExclusive = "exclusive"
	IntentAdvisory  = "advisory"
)

// Intent states.
const (
	IntentActive   = "active"
	IntentReleased = "released"
	IntentExpired  = "expired"
)

// The intent shapes are promptd's wire types (package wire).
type (
	// Intent is a registered intent: its holder, scope, fence and expiry.
	Intent = wire.Intent
	// RegisteredIntent is a registration's answer: the intent and every
	// live intent whose scope overlaps it (advisory ones, or an advisory
	// registration beside advisory ones).
	RegisteredIntent = wire.RegisteredIntent
	// IntentScope is what an intent covers: agents (names, or prefixes
	// ending in '*') in envs (none: every env), whole boards, and records
	// of boards by id or id prefix.
	IntentScope = wire.IntentScope
	// IntentRecordScope is records of one board: ids and id prefixes.
	IntentRecordScope = wire.IntentRecordScope
	// IntentRef names the intent a write is made under, with its fence.
	IntentRef = wire.IntentRef
)

// IntentInput is an intent to register. Mode "" is exclusive; TTL is
// 1 s..1 h (0: 30 s).
type IntentInput struct {
	Holder      string
	Mode        string
	Scope       IntentScope
	TTL         time.Duration
	Description string
}

// ListIntentsOptions select the live intents ListIntents lists: those
// overlapping the scope the names give (none: every live one, which only an
// unscoped token may ask for), held by Holder when set. Records are
// "board/id", or "board/prefix*" for the records an id prefix starts.
type ListIntentsOptions struct {
	Agents, Envs, Boards, Records []string
	Holder                        string
	ListOptions
}

func intentPath(id string) string { return "/v1/intents/" + seg(id) }

// RegisterIntent registers an intent (with an Idempotency-Key, so a retry
// registers it once). An overlap its mode, or another's, excludes is
// ErrIntentConflict, whose IntentConflicts name the intents in the way.
func (c *Client) RegisterIntent(ctx context.Context, in IntentInput) (*RegisteredIntent, error) {
	body := map[string]any{"holder": in.Holder, "scope": in.Scope}
	if in.Mode != "" {
		body["mode"] = in.Mode
	}
	if in.TTL > 0 {
		body["ttl_ms"] = in.TTL.Milliseconds()
	}
	if in.Description != "" {
		body["description"] = in.Description
	}
	var r RegisteredIntent
	_, err := c.do(ctx, call{method: http.MethodPost, path: "/v1/intents", body: body, idempotent: true}, &r)
	return ret(&r, err)
}

// GetIntent reads an intent, live or ended (until the retention drops
// it: ErrIntentNotFound).
func (c *Client) GetIntent(ctx context.Context, id string) (*Intent, error) {
	var it Intent
	_, err := c.do(ctx, call{method: http.MethodGet, path: intentPath(id)}, &it)
	return ret(&it, err)
}

// RenewIntent extends a live intent to ttl from now (0: its TTL). An
// intent that ended, or another fence, is ErrStaleFence.
func (c *Client) RenewIntent(ctx context.Context, id string, fence int64, ttl time.Duration) (*Intent, error) {
	body := map[string]any{"fence": fence}
	if ttl > 0 {
		body["ttl_ms"] = ttl.Milliseconds()
	}
	var it Intent
	_, err := c.do(ctx, call{method: http.MethodPost, path: intentPath(id) + "/renew", body: body}, &it)
	return ret(&it, err)
}

// ReleaseIntent ends an intent: it answers the intent released, or as it
// ended before (released or expired). Writes under it are ErrStaleFence
// from then on.
func (c *Client) ReleaseIntent(ctx context.Context, id string, fence int64) (*Intent, error) {
	var it Intent
	_, err := c.do(ctx, call{method: http.MethodPost, path: intentPath(id) + "/release", body: map[string]any{"fence": fence}}, &it)
	return ret(&it, err)
}

// ListIntents lists the live intents o selects, by id. A scoped token
// names an agent, env, board or record within its scopes.
func (c *Client) ListIntents(ctx context.Context, o ListIntentsOptions) (*Page[Intent], error) {
	q := o.query()
	for k, vs := range map[string][]string{"agent": o.Agents, "env": o.Envs, "board": o.Boards, "record": o.Records} {
		for _, v := range vs {
			q.Add(k, v)
		}
	}
	if o.Holder != "" {
		q.Set("holder", o.Holder)
	}
	var p Page[Intent]
	_, err := c.do(ctx, call{method: http.MethodGet, path: "/v1/intents", query: q}, &p)
	return ret(&p, err)
}
