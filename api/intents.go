package api

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/intent"
	"github.com/promptd/promptd/problem"
	"github.com/promptd/promptd/wire"
)

// registerIntentRequest is the body of POST /v1/intents.
type registerIntentRequest struct {
	Holder      string            `json:"holder"`
	Mode        string            `json:"mode"`
	Scope       *wire.IntentScope `json:"scope"`
	TTLMs       *int64            `json:"ttl_ms"`
	Description string            `json:"description"`
}

// intentRef is the intent a write names, as the domain takes it.
func intentRef(r *wire.IntentRef) *intent.Ref {
	if r == nil {
		return nil
	}
	return &intent.Ref{ID: r.ID, Fence: r.Fence}
}

func registeredEntity(r *intent.Registered) any {
	return wire.RegisteredIntent{Intent: r.Intent.Wire(), Overlaps: intent.Wires(r.Overlaps)}
}

// intentInScope: a scoped token registers and queries only within its
// scopes (every agent, env and board the scope names).
func (s *Server) intentInScope(c echo.Context, sc intent.Scope) error {
	t := tokenOf(c)
	if t == nil || t.Scopes.Unscoped() {
		return nil
	}
	if !sc.Within(t.Scopes.Names(access.KindAgent), t.Scopes.Names(access.KindEnv), t.Scopes.Names(access.KindBoard)) {
		return problem.OutOfScope("scope", "the intent's scope names agents, envs or boards outside token "+t.Name+"'s scopes")
	}
	return nil
}

// handleRegisterIntent: POST /v1/intents (runtime, Idempotency-Key): 201
// with the intent and every live intent that overlaps it; an exclusive
// overlap: 409 intent_conflict naming the others.
func (s *Server) handleRegisterIntent(c echo.Context) error {
	var req registerIntentRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Scope == nil {
		return invalidField("scope", "scope is required: {agents?, envs?, boards?, records?}")
	}
	ttl, err := msDuration(req.TTLMs, "ttl_ms", intent.MinTTL, intent.MaxTTL, 0)
	if err != nil {
		return err
	}
	sc := intent.ScopeOf(*req.Scope)
	norm, err := sc.Normalize("scope")
	if err != nil {
		return err
	}
	if err := s.intentInScope(c, norm); err != nil {
		return err
	}
	r, err := s.rt.Intents.Register(c.Request().Context(), intent.Input{Holder: req.Holder, Mode: req.Mode, Scope: sc, TTL: ttl,
		Description: req.Description}, recordAnswer(s, c, http.StatusCreated, registeredEntity))
	if err != nil {
		return err
	}
	return s.send(c, http.StatusCreated, registeredEntity(r))
}

// intentTarget reads the path's intent for a scoped token's check.
func (s *Server) intentTarget(c echo.Context) (string, error) {
	id, err := pathID(c, "id")
	if err != nil {
		return "", err
	}
	if t := tokenOf(c); t != nil && !t.Scopes.Unscoped() {
		it, err := s.rt.Intents.Get(c.Request().Context(), id)
		if err != nil {
			return "", err
		}
		if err := s.intentInScope(c, it.Scope); err != nil {
			return "", err
		}
	}
	return id, nil
}

// handleGetIntent: GET /v1/intents/{id}.
func (s *Server) handleGetIntent(c echo.Context) error {
	id, err := s.intentTarget(c)
	if err != nil {
		return err
	}
	it, err := s.rt.Intents.Get(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return s.send(c, http.StatusOK, it.Wire())
}

// intentFenceRequest is the body of renew and release.
type intentFenceRequest struct {
	Fence *int64 `json:"fence"`
	TTLMs *int64 `json:"ttl_ms"`
}

// intentFence is the prelude of renew and release: the path's intent
// (in the token's scopes) and the body, which names its fence.
func (s *Server) intentFence(c echo.Context) (string, intentFenceRequest, error) {
	var req intentFenceRequest
	id, err := s.intentTarget(c)
	if err != nil {
		return "", req, err
	}
	if err := decode(c, &req); err != nil {
		return "", req, err
	}
	if req.Fence == nil {
		return "", req, invalidField("fence", "fence is required: the intent's fence")
	}
	return id, req, nil
}

// handleRenewIntent: POST /v1/intents/{id}/renew {fence, ttl_ms?}: 200;
// ended or another fence: 409 stale_fence.
func (s *Server) handleRenewIntent(c echo.Context) error {
	id, req, err := s.intentFence(c)
	if err != nil {
		return err
	}
	ttl, err := msDuration(req.TTLMs, "ttl_ms", intent.MinTTL, intent.MaxTTL, 0)
	if err != nil {
		return err
	}
	it, err := s.rt.Intents.Renew(c.Request().Context(), id, *req.Fence, ttl)
	if err != nil {
		return err
	}
	return s.send(c, http.StatusOK, it.Wire())
}

// handleReleaseIntent: POST /v1/intents/{id}/release {fence}: 200 with
// the intent (released, or as it ended before).
func (s *Server) handleReleaseIntent(c echo.Context) error {
	id, req, err := s.intentFence(c)
	if err != nil {
		return err
	}
	if req.TTLMs != nil {
		return invalidField("ttl_ms", "a release takes the fence only")
	}
	it, err := s.rt.Intents.Release(c.Request().Context(), id, *req.Fence)
	if err != nil {
		return err
	}
	return s.send(c, http.StatusOK, it.Wire())
}

// handleListIntents: GET /v1/intents?agent=&env=&board=&record=&holder=:
// the live intents overlapping the scope the parameters give (every live
// one without any), paginated. record is board/id, or board/prefix* for
// a prefix.
func (s *Server) handleListIntents(c echo.Context) error {
	p, err := pageOf(c)
	if err != nil {
		return err
	}
	q := c.QueryParams()
	var sc intent.Scope
	sc.Agents, sc.Envs, sc.Boards = q["agent"], q["env"], q["board"]
	for _, r := range q["record"] {
		b, id, ok := strings.Cut(r, "/")
		if !ok {
			return invalidField("record", "record is board/id or board/prefix*")
		}
		if prefix, isPrefix := strings.CutSuffix(id, "*"); isPrefix {
			sc.Records = append(sc.Records, intent.RecordScope{Board: b, Prefixes: []string{prefix}})
		} else {
			sc.Records = append(sc.Records, intent.RecordScope{Board: b, IDs: []string{id}})
		}
	}
	norm, err := sc.Normalize("scope")
	if err != nil {
		return err
	}
	t := tokenOf(c)
	scoped := t != nil && !t.Scopes.Unscoped()
	if scoped && norm.Empty() {
		return invalidField("agent", "a scoped token queries intents by agent, env, board or record")
	}
	if err := s.intentInScope(c, norm); err != nil {
		return err
	}
	holder := c.QueryParam("holder")
	if len(holder) > 256 {
		return invalidField("holder", "holder is at most 256 bytes")
	}
	items, next, err := s.rt.Intents.List(c.Request().Context(), intent.Query{Scope: sc, Holder: holder, Limit: p.Limit, Cursor: p.Cursor})
	if err != nil {
		return err
	}
	return s.send(c, http.StatusOK, list[wire.Intent]{Items: intent.Wires(items), Next: cursor(next)})
}
