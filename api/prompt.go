package api

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/ident"
	"github.com/promptd/promptd/prompt"
	"github.com/promptd/promptd/promptstore"
)

// promptResponse is a resolved prompt: which version this caller gets,
// why, and its config.
type promptResponse struct {
	Agent        string          `json:"agent"`
	Env          string          `json:"env"`
	Version      int             `json:"version"`
	ContentHash  string          `json:"content_hash"`
	Config       json.RawMessage `json:"config"`
	Release      *prompt.Trace   `json:"release"`
	Pinned       bool            `json:"pinned"`
	RepinnedFrom *int            `json:"repinned_from"`
}

// resolveRequest reads the caller's identifiers; the prompt store checks
// them, once (ResolvePrompt and Assemble validate the request). A
// session_id is resolved by the configured resolver (session pin first);
// without a History (no sessions wired) it is 404 session_not_found.
func (s *Server) resolveRequest(c echo.Context, userID, sessionID string) (promptstore.Request, error) {
	agent, err := param(c, "agent")
	if err != nil {
		return promptstore.Request{}, err
	}
	env, err := param(c, "env")
	if err != nil {
		return promptstore.Request{}, err
	}
	req := promptstore.Request{Agent: agent, Env: env, UserID: userID, SessionID: sessionID}
	return req, nil
}

// handlePrompt: GET /v1/agents/{agent}/envs/{env}/prompt?user_id=&session_id=.
// The ETag hashes the whole body, so If-None-Match gives 304 until the
// answer for this caller changes; Cache-Control: private, no-cache.
func (s *Server) handlePrompt(c echo.Context) error {
	if c.QueryParams().Has("user_id") && c.QueryParam("user_id") == "" {
		return promptstore.ValidateOpaque("user_id", "")
	}
	if c.QueryParams().Has("session_id") && c.QueryParam("session_id") == "" {
		return ident.Validate("session_id", "")
	}
	req, err := s.resolveRequest(c, c.QueryParam("user_id"), c.QueryParam("session_id"))
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	p, err := s.rt.Prompts.ResolvePrompt(ctx, s.rt.Resolver, req)
	if err != nil {
		return err
	}
	if p.Release != nil {
		traceVersion(c, p.Version, p.Release.ID)
	} else {
		traceVersion(c, p.Version, "")
	}
	s.exposed(req.Agent, req.Env, p.Version, p.Release)
	buf := bodyPool.Get().(*[]byte)
	defer bodyPool.Put(buf)
	a, err := s.answers.get(p, buf)
	if err != nil {
		return err
	}
	h := c.Response().Header()
	setPromptHeaders(h, p.Agent, p.Env, p.Version, p.Release)
	h[headerETag] = a.etag
	h[echo.HeaderCacheControl] = cacheControlPrivate
	if etagMatches(c.Request().Header.Get("If-None-Match"), a.etag[0]) {
		return notModified(c)
	}
	h[echo.HeaderContentType] = contentTypeJSON
	h[echo.HeaderContentLength] = a.length
	c.Response().WriteHeader(http.StatusOK)
	_, err = c.Response().Write(a.body)
	return err
}

// setPromptHeaders names what was served: Promptd-Version
// "<agent>/<env>/<version>" and, when a release had a part,
// Promptd-Release (an RFC 8941 dictionary: id, arm, bucket, reason).
func setPromptHeaders(h http.Header, agent, env string, version int, t *prompt.Trace) {
	h[headerPromptdVersion] = []string{prompt.VersionHeader(agent, env, version)}
	if t != nil {
		h[headerPromptdRelease] = []string{t.ReleaseHeader()}
	}
}

// Header values of resolve answers, shared by every response. Nothing
// writes into a header's slice: net/http reads them, Header.Set replaces
// the slice and Header.Add appends to a full one, which copies it.
var (
	headerETag           = http.CanonicalHeaderKey("ETag")
	headerPromptdVersion = http.CanonicalHeaderKey("Promptd-Version")
	headerPromptdRelease = http.CanonicalHeaderKey("Promptd-Release")
	cacheControlPrivate  = []string{"private, no-cache"}
	contentTypeJSON      = []string{echo.MIMEApplicationJSON}
)

// promptAnswer is a rendered resolve answer: the body, its ETag and its
// length as header values.
type promptAnswer struct {
	body   []byte
	etag   []string
	length []string
}

// answerCache keeps rendered resolve answers, so the runtime path renders
// and hashes a body once per (snapshot, env, pin) instead of on every
// request. A body is a function of the Prompt alone, and a snapshot is
// immutable, so an entry can never be stale: a pointer switch, a release
// or a revocation resolves to another snapshot or another arm, that is
// another key. Answers with a release trace (which names the caller's
// bucket) or a re-pin are rendered each time. The cache is emptied when
// it holds more than maxBytes of bodies.
type answerCache struct {
	mu       sync.RWMutex
	m        map[answerKey]*promptAnswer
	bytes    int
	maxBytes int
}

// answerKey identifies a cacheable answer: p.Release and p.RepinnedFrom
// are nil, p.Agent and p.Version are the snapshot's.
type answerKey struct {
	snap   *promptstore.Snapshot
	env    string
	pinned bool
}

func newAnswerCache(maxBytes int) *answerCache {
	return &answerCache{m: map[answerKey]*promptAnswer{}, maxBytes: maxBytes}
}

// get returns p's answer, rendering it when it is not cached. An answer
// that is not cacheable is rendered into scratch and valid until scratch
// is reused.
func (c *answerCache) get(p *promptstore.Prompt, scratch *[]byte) (*promptAnswer, error) {
	cacheable := p.Release == nil && p.RepinnedFrom == nil && p.Agent == p.Snapshot.Agent && p.Version == p.Snapshot.Version.Version
	k := answerKey{snap: p.Snapshot, env: p.Env, pinned: p.Pinned}
	if cacheable {
		c.mu.RLock()
		a := c.m[k]
		c.mu.RUnlock()
		if a != nil {
			return a, nil
		}
	}
	if !cacheable {
		body, etag, err := promptBody((*scratch)[:0], p)
		if err != nil {
			return nil, err
		}
		*scratch = body
		return &promptAnswer{body: body, etag: []string{etag}, length: []string{strconv.Itoa(len(body))}}, nil
	}
	body, etag, err := promptBody(nil, p)
	if err != nil {
		return nil, err
	}
	a := &promptAnswer{body: body, etag: []string{etag}, length: []string{strconv.Itoa(len(body))}}
	if len(body) <= c.maxBytes/16 {
		c.mu.Lock()
		if c.bytes+len(body) > c.maxBytes {
			c.m, c.bytes = map[answerKey]*promptAnswer{}, 0
		}
		if _, ok := c.m[k]; !ok {
			c.m[k] = a
			c.bytes += len(body)
		}
		c.mu.Unlock()
	}
	return a, nil
}

// bodyPool recycles the bodies of answers that are not cached: they have
// been written when the handler returns.
var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

// promptBody renders the resolve answer, appended to b, and its ETag. It is the hot path
// of every runtime, so the config (canonical JSON, already compact and
// valid) is copied as stored instead of going through encoding/json, which
// would re-validate and compact kilobytes of RawMessage on every request;
// the bytes are those of encodeJSON(promptResponse{...}). The ETag hashes
// every byte of the body but the config, which its content_hash (in the
// body, and so in the hash) identifies.
func promptBody(b []byte, p *promptstore.Prompt) (body []byte, etag string, err error) {
	trace, err := json.Marshal(p.Release)
	if err != nil {
		return nil, "", err
	}
	// agent and env passed the identifier rule ([A-Za-z0-9._-]) and the
	// content hash is hex: none needs escaping.
	b = append(b, `{"agent":"`...)
	b = append(b, p.Agent...)
	b = append(b, `","env":"`...)
	b = append(b, p.Env...)
	b = append(b, `","version":`...)
	b = strconv.AppendInt(b, int64(p.Version), 10)
	b = append(b, `,"content_hash":"`...)
	b = append(b, p.Snapshot.ContentHash...)
	b = append(b, `","config":`...)
	head := len(b)
	b = append(b, p.Snapshot.Config...)
	tail := len(b)
	b = append(b, `,"release":`...)
	b = append(b, trace...)
	b = append(b, `,"pinned":`...)
	b = strconv.AppendBool(b, p.Pinned)
	b = append(b, `,"repinned_from":`...)
	if p.RepinnedFrom != nil {
		b = strconv.AppendInt(b, int64(*p.RepinnedFrom), 10)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, "}\n"...)
	h := sha256.New()
	h.Write(b[:head])
	h.Write(b[tail:])
	return b, `"` + hex.EncodeToString(h.Sum(nil)[:16]) + `"`, nil
}

// assembleRequest is the body of POST .../envs/{env}/assemble.
type assembleRequest struct {
	UserID          *string         `json:"user_id"`
	SessionID       *string         `json:"session_id"`
	Variables       json.RawMessage `json:"variables"`
	History         bool            `json:"history"`
	MaxHistoryTurns int             `json:"max_history_turns"`
	Format          *string         `json:"format"`
}

func (r *assembleRequest) validate() error {
	if r.Variables != nil && string(r.Variables) != "null" && !isObject(r.Variables) {
		return invalidField("variables", "variables must be an object of strings")
	}
	if r.UserID != nil && *r.UserID == "" {
		return promptstore.ValidateOpaque("user_id", "")
	}
	if r.SessionID != nil && *r.SessionID == "" {
		return ident.Validate("session_id", "")
	}
	return nil
}

// assembleFormat is the answer's format: ?format= or the body's "format"
// (plain by default); both given and different: 400 invalid_field.
func assembleFormat(c echo.Context, body *string) (string, error) {
	q, inQuery := c.QueryParams()["format"]
	switch {
	case inQuery && len(q) != 1:
		return "", invalidField("format", "format is given more than once")
	case inQuery && body != nil && q[0] != *body:
		return "", invalidField("format", "format in the query (%q) and in the body (%q) differ", q[0], *body)
	case inQuery:
		return prompt.ParseFormat("format", q[0])
	case body != nil:
		return prompt.ParseFormat("format", *body)
	}
	return prompt.FormatPlain, nil
}

// handleAssemble: POST /v1/agents/{agent}/envs/{env}/assemble: the final
// messages for a runtime call, in the plain shape or (format=openai) as
// the body of an OpenAI Chat Completions request (no model.name: 422
// invalid_config). Missing required variable: 422
// missing_variable; a value that is not a string: 422 invalid_variable.
// An answer that would pass PROMPTD_ASSEMBLE_MAX_BYTES (sized before it is
// rendered): 422 limit_exceeded, field "assembled_bytes"; the history gets
// what the rest leaves of that budget (newest turns first) and at most
// max_history_turns turns (default and cap
// PROMPTD_ASSEMBLE_MAX_HISTORY_TURNS).
func (s *Server) handleAssemble(c echo.Context) error {
	var body assembleRequest
	if err := decode(c, &body); err != nil {
		return err
	}
	format, err := assembleFormat(c, body.Format)
	if err != nil {
		return err
	}
	req, err := s.resolveRequest(c, deref(body.UserID), deref(body.SessionID))
	if err != nil {
		return err
	}
	var vars map[string]json.RawMessage
	if isObject(body.Variables) {
		if err := json.Unmarshal(body.Variables, &vars); err != nil {
			return invalidField("variables", "variables must be an object of strings")
		}
	}
	ctx := c.Request().Context()
	a, err := s.rt.Prompts.Assemble(ctx, s.rt.Resolver, s.rt.Sessions, promptstore.AssembleInput{
		Request: req, Variables: vars, History: body.History, MaxHistoryTurns: body.MaxHistoryTurns})
	if err != nil {
		return err
	}
	s.exposed(req.Agent, req.Env, a.Version, a.Release)
	out, err := a.Body(format)
	if err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set(echo.HeaderCacheControl, "no-store")
	setPromptHeaders(h, req.Agent, req.Env, a.Version, a.Release)
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, out)
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
