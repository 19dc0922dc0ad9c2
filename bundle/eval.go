package bundle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/promptd/promptd/prompt"
)

// Server defaults the evaluator shares (promptstore's): the history's
// length when a request names none, and the most a request may name.
const (
	DefaultMaxHistoryTurns = 1000
	MaxHistoryTurnsRequest = 10000
)

// Request asks what a caller gets, as GET .../prompt and POST
// .../assemble do.
type Request struct {
	Agent, Env string
	// UserID buckets the caller; with a session, the session's user id
	// (it wins on the server).
	UserID string
	// SessionID and PinnedVersion: the caller's session and the version it
	// is pinned to (from the session's create answer). A session without
	// a pinned version is the server's to resolve.
	SessionID     string
	PinnedVersion int
	// For Assemble: the variables, the session's turns (oldest first;
	// give them only with a session, as the server reads them from it),
	// max_history_turns (0: DefaultMaxHistoryTurns) and the format ("" is
	// plain).
	Variables       map[string]json.RawMessage
	History         []prompt.Message
	MaxHistoryTurns int
	Format          string
}

// Resolved is the resolve answer, field for field the server's body.
type Resolved struct {
	Agent        string          `json:"agent"`
	Env          string          `json:"env"`
	Version      int             `json:"version"`
	ContentHash  string          `json:"content_hash"`
	Config       json.RawMessage `json:"config"`
	Release      *prompt.Trace   `json:"release"`
	Pinned       bool            `json:"pinned"`
	RepinnedFrom *int            `json:"repinned_from"` // always nil: a re-pin is the server's

	cfg *prompt.Config
}

// Body is the resolve answer's bytes, as the server writes them.
func (r *Resolved) Body() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(r)
	return buf.Bytes(), err
}

// Evaluator answers from one bundle. Safe for concurrent use; build a
// new one for a new bundle.
type Evaluator struct {
	b       *Bundle
	configs map[string]map[int]*parsed
	revoked map[string]map[string]map[int]bool
	rels    map[string]map[string]*prompt.Release
	// unknown: the bundle's format is not one this package knows; every
	// answer is AskServer (format_unknown).
	unknown bool
}

type parsed struct {
	cfg   *prompt.Config
	canon []byte
	hash  string
}

// New parses every config of b once and checks it against its
// content_hash.
func New(b *Bundle) (*Evaluator, error) {
	e := &Evaluator{b: b, configs: map[string]map[int]*parsed{}, revoked: map[string]map[string]map[int]bool{},
		rels: map[string]map[string]*prompt.Release{}}
	if !KnownFormat(b.Format) {
		e.unknown = true // its configs may mean what this evaluator cannot render
		return e, nil
	}
	for name, a := range b.Agents {
		e.configs[name] = map[int]*parsed{}
		for n, v := range a.Versions {
			cfg, canon, err := prompt.Load(v.Config)
			if err != nil {
				return nil, fmt.Errorf("bundle: %s v%d: %w", name, n, err)
			}
			if got := prompt.ContentHash(canon); got != v.ContentHash {
				return nil, fmt.Errorf("bundle: %s v%d: content_hash %s, config hashes to %s", name, n, v.ContentHash, got)
			}
			e.configs[name][n] = &parsed{cfg: cfg, canon: canon, hash: v.ContentHash}
		}
		e.revoked[name] = map[string]map[int]bool{}
		e.rels[name] = map[string]*prompt.Release{}
		for env, st := range a.Envs {
			rv := make(map[int]bool, len(st.Revoked))
			for _, n := range st.Revoked {
				rv[n] = true
			}
			e.revoked[name][env] = rv
			if r := st.Release; r.Active() {
				pr := &prompt.Release{ID: r.ID, BaselineVersion: r.BaselineVersion, CandidateVersion: r.CandidateVersion,
					BasisPoints: r.BasisPoints, Stickiness: r.Stickiness}
				if o := r.Overrides; o != nil && len(o.Candidate)+len(o.Baseline) > 0 {
					pr.Overrides = prompt.NewOverrides(o.Candidate, o.Baseline)
				}
				e.rels[name][env] = pr
			}
		}
	}
	return e, nil
}

// Resolve answers GET /v1/agents/{agent}/envs/{env}/prompt: a session's
// pin (pinned: true; while a release is active the trace names the arm
// of the pinned version, reason "pinned"), else the active release's arm
// (overrides, then bucket < basis points; a revoked candidate serves the
// baseline), else the env pointer.
func (e *Evaluator) Resolve(req Request) (*Resolved, error) {
	if e.unknown {
		return nil, &AskServer{Reason: ReasonFormatUnknown}
	}
	if err := validate(req); err != nil {
		return nil, err
	}
	a, ok := e.b.Agents[req.Agent]
	if !ok {
		return nil, &Error{Code: "agent_not_found", Status: 404, Detail: "no agent " + req.Agent}
	}
	st, ok := a.Envs[req.Env]
	if !ok {
		return nil, &Error{Code: "no_pointer", Status: 409, Detail: "env " + req.Env + " has no pointer"}
	}
	rel, revoked := e.rels[req.Agent][req.Env], e.revoked[req.Agent][req.Env]
	out := &Resolved{Agent: req.Agent, Env: req.Env, Version: st.Version}
	var decided *prompt.Trace
	if rel != nil {
		out.Version, decided = prompt.Decide(rel, revoked, req.UserID, req.SessionID)
		out.Release = decided
	}
	if req.SessionID != "" {
		switch {
		case req.PinnedVersion <= 0:
			return nil, &AskServer{Reason: ReasonPinUnknown}
		case revoked[req.PinnedVersion]:
			return nil, &AskServer{Reason: ReasonPinRevoked}
		}
		out.Version, out.Pinned = req.PinnedVersion, true
		out.Release = prompt.Pinned(rel, decided, req.PinnedVersion)
	}
	p, ok := e.configs[req.Agent][out.Version]
	if !ok {
		return nil, &AskServer{Reason: ReasonVersionMissing}
	}
	out.ContentHash, out.Config, out.cfg = p.hash, p.canon, p.cfg
	return out, nil
}

// Assemble answers POST /v1/agents/{agent}/envs/{env}/assemble: the
// answer's bytes in req.Format, exactly the server's, and the
// resolution it was made from (for the Promptd-Version and
// Promptd-Release a caller may want).
func (e *Evaluator) Assemble(req Request) ([]byte, *Resolved, error) {
	if e.unknown {
		return nil, nil, &AskServer{Reason: ReasonFormatUnknown}
	}
	format, err := prompt.ParseFormat("format", req.Format)
	if err != nil {
		return nil, nil, fromInvalid(err)
	}
	if req.MaxHistoryTurns < 0 || req.MaxHistoryTurns > MaxHistoryTurnsRequest {
		return nil, nil, &Error{Code: prompt.CodeInvalidField, Status: 400, Field: "max_history_turns",
			Detail: fmt.Sprintf("max_history_turns must be 0..%d", MaxHistoryTurnsRequest)}
	}
	res, err := e.Resolve(req)
	if err != nil {
		return nil, nil, err
	}
	vars, err := res.cfg.Bind(req.Variables)
	if err != nil {
		return nil, nil, fromInvalid(err)
	}
	var history []prompt.Message
	if req.SessionID != "" {
		turns := req.MaxHistoryTurns
		if turns == 0 {
			turns = DefaultMaxHistoryTurns
		}
		history = prompt.CutHistory(req.History, turns)
	}
	a := prompt.Assemble(res.cfg, res.Version, res.ContentHash, vars, history)
	a.Release, a.Pinned = res.Release, res.Pinned
	body, err := a.Body(format)
	if err != nil {
		return nil, nil, fromInvalid(err)
	}
	return body, res, nil
}

// validate applies the server's identifier rules: agent and env 1..128
// of [A-Za-z0-9._-], first alphanumeric; user_id 1..256 bytes of
// printable UTF-8.
func validate(req Request) error {
	for _, f := range []struct{ name, v string }{{"agent", req.Agent}, {"env", req.Env}, {"session_id", req.SessionID}} {
		if f.v == "" && f.name == "session_id" {
			continue
		}
		if !validID(f.v) {
			return &Error{Code: prompt.CodeInvalidID, Status: 400, Field: f.name, Detail: f.name + " must be 1..128 of [A-Za-z0-9._-], first alphanumeric"}
		}
	}
	if req.UserID != "" && !validOpaque(req.UserID) {
		return &Error{Code: prompt.CodeInvalidID, Status: 400, Field: "user_id", Detail: "user_id must be 1..256 bytes of printable UTF-8"}
	}
	return nil
}

func validID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return false
		}
	}
	return true
}

func validOpaque(s string) bool {
	if len(s) > 256 || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) && r != ' ' {
			return false
		}
	}
	return true
}
