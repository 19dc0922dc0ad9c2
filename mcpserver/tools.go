package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/board"
	"github.com/promptd/promptd/problem"
	"github.com/promptd/promptd/session"
	"github.com/promptd/promptd/wire"
)

// The tools' inputs. A field without omitempty is required; the schemas
// are inferred from these types (jsonschema tags are the descriptions),
// then made exact (exact).

// ClaimInput is claim_record's input.
type ClaimInput struct {
	Board  string `json:"board" jsonschema:"the board to claim the next eligible record of"`
	Holder string `json:"holder" jsonschema:"who claims: the record's owner while the claim lasts"`
	TTLMs  int64  `json:"ttl_ms,omitempty" jsonschema:"the claim's lifetime in ms; default the board's claim ttl"`
}

// HeartbeatInput is heartbeat_record's input.
type HeartbeatInput struct {
	Board    string `json:"board" jsonschema:"the record's board"`
	RecordID string `json:"record_id" jsonschema:"the claimed record"`
	Fence    int64  `json:"fence" jsonschema:"the claim's fence (claim_record's answer)"`
	TTLMs    int64  `json:"ttl_ms,omitempty" jsonschema:"the claim's new lifetime from now in ms; default the claim's"`
}

// CompleteInput is complete_record's input.
type CompleteInput struct {
	Board            string `json:"board" jsonschema:"the record's board"`
	RecordID         string `json:"record_id" jsonschema:"the claimed record"`
	Fence            int64  `json:"fence" jsonschema:"the claim's fence"`
	ExpectedRevision int64  `json:"expected_revision" jsonschema:"the record's current revision (claim_record's or heartbeat_record's answer)"`
	State            string `json:"state" jsonschema:"the state to move the record to: a transition of the board (a terminal state completes it)"`
	Payload          any    `json:"payload,omitempty" jsonschema:"the record's new payload (a JSON object); omitted: unchanged"`
}

// AcquireInput is acquire_session_lease's input.
type AcquireInput struct {
	SessionID string `json:"session_id" jsonschema:"the session to lease"`
	Holder    string `json:"holder" jsonschema:"who holds the lease"`
	TTLMs     int64  `json:"ttl_ms,omitempty" jsonschema:"the lease's lifetime in ms; default 5000"`
}

// TurnInput is one turn of append_session_turns.
type TurnInput struct {
	Role    string `json:"role" jsonschema:"the turn's role"`
	Content string `json:"content" jsonschema:"the turn's text"`
}

// AppendInput is append_session_turns' input.
type AppendInput struct {
	SessionID        string      `json:"session_id" jsonschema:"the session"`
	Fence            int64       `json:"fence" jsonschema:"the lease's fence (acquire_session_lease's answer)"`
	ExpectedRevision int64       `json:"expected_revision" jsonschema:"the session's current revision"`
	Turns            []TurnInput `json:"turns" jsonschema:"the turns to append, in order"`
}

// ReleaseInput is release_session_lease's input.
type ReleaseInput struct {
	SessionID  string `json:"session_id" jsonschema:"the session"`
	LeaseToken string `json:"lease_token" jsonschema:"the lease's token (acquire_session_lease's answer)"`
}

// The tools' answers (their structured content).

// Claimed is claim_record's answer.
type Claimed struct {
	Claimed        bool            `json:"claimed"`
	RecordID       string          `json:"record_id,omitempty"`
	Fence          int64           `json:"fence,omitempty"`
	Revision       int64           `json:"revision,omitempty"`
	State          string          `json:"state,omitempty"`
	ClaimExpiresAt *wire.Time      `json:"claim_expires_at,omitempty"`
	Payload        json.RawMessage `json:"payload,omitempty"`
}

// Heartbeat is heartbeat_record's answer.
type Heartbeat struct {
	Revision       int64      `json:"revision"`
	ClaimExpiresAt *wire.Time `json:"claim_expires_at"`
	ClaimTTLMs     int64      `json:"claim_ttl_ms"`
}

// Completed is complete_record's answer.
type Completed struct {
	RecordID string `json:"record_id"`
	Revision int64  `json:"revision"`
	State    string `json:"state"`
}

// SessionLease is acquire_session_lease's answer.
type SessionLease struct {
	LeaseID    string    `json:"lease_id"`
	LeaseToken string    `json:"lease_token"`
	Fence      int64     `json:"fence"`
	ExpiresAt  wire.Time `json:"expires_at"`
	Revision   int64     `json:"revision"`
}

// Tool names.
const (
	ToolClaim        = "claim_record"
	ToolHeartbeat    = "heartbeat_record"
	ToolComplete     = "complete_record"
	ToolAcquireLease = "acquire_session_lease"
	ToolAppendTurns  = "append_session_turns"
	ToolReleaseLease = "release_session_lease"
)

func addTools(sv *server) {
	rt := sv.s.rt
	ms := func(d time.Duration) float64 { return float64(d.Milliseconds()) }
	addTool(sv, ToolClaim, "Claim the next eligible record of a board: its id, fence, revision, claim expiry and payload, or claimed false when none is eligible.",
		func(s *jsonschema.Schema) {
			bound(s, "ttl_ms", ms(board.MinClaimTTL), ms(board.MaxClaimTTL))
		},
		func(ctx context.Context, in ClaimInput) (any, error) {
			if err := sv.allowBoard(in.Board); err != nil {
				return nil, err
			}
			r, err := rt.Boards.ClaimNext(ctx, in.Board, board.ClaimInput{Holder: in.Holder, TTL: time.Duration(in.TTLMs) * time.Millisecond})
			if err != nil || r == nil {
				return Claimed{}, err
			}
			out := Claimed{Claimed: true, RecordID: r.ID, Fence: r.Fence, Revision: r.Revision, State: r.State, Payload: r.Payload}
			if r.ClaimExpiresAt != nil {
				t := wire.At(*r.ClaimExpiresAt)
				out.ClaimExpiresAt = &t
			}
			return out, nil
		})
	addTool(sv, ToolHeartbeat, "Extend a claim on a board record (its fence, before it expires).",
		func(s *jsonschema.Schema) { bound(s, "ttl_ms", ms(board.MinClaimTTL), ms(board.MaxClaimTTL)) },
		func(ctx context.Context, in HeartbeatInput) (any, error) {
			if err := sv.allowBoard(in.Board); err != nil {
				return nil, err
			}
			r, err := rt.Boards.Heartbeat(ctx, in.Board, in.RecordID, in.Fence, time.Duration(in.TTLMs)*time.Millisecond)
			if err != nil {
				return nil, err
			}
			out := Heartbeat{Revision: r.Revision, ClaimTTLMs: r.ClaimTTLMs}
			if r.ClaimExpiresAt != nil {
				t := wire.At(*r.ClaimExpiresAt)
				out.ClaimExpiresAt = &t
			}
			return out, nil
		})
	addTool(sv, ToolComplete, "Move a claimed board record to a state (a terminal state completes it), with the claim's fence and the record's revision.",
		func(s *jsonschema.Schema) {
			s.Properties["payload"] = &jsonschema.Schema{Type: "object", Description: s.Properties["payload"].Description}
		},
		func(ctx context.Context, in CompleteInput) (any, error) {
			if err := sv.allowBoard(in.Board); err != nil {
				return nil, err
			}
			u := board.Update{ExpectedRevision: in.ExpectedRevision, State: &in.State, Fence: &in.Fence}
			if in.Payload != nil {
				b, err := json.Marshal(in.Payload)
				if err != nil {
					return nil, err
				}
				u.Payload = b
			}
			r, err := rt.Boards.Patch(ctx, in.Board, in.RecordID, u)
			if err != nil {
				return nil, err
			}
			return Completed{RecordID: r.ID, Revision: r.Revision, State: r.State}, nil
		})
	addTool(sv, ToolAcquireLease, "Acquire a session's lease: the fence every append carries, the lease token that releases it, and the session's revision.",
		func(s *jsonschema.Schema) { bound(s, "ttl_ms", ms(session.MinLeaseTTL), ms(session.MaxLeaseTTL)) },
		func(ctx context.Context, in AcquireInput) (any, error) {
			if _, err := sv.allowSession(ctx, in.SessionID); err != nil {
				return nil, err
			}
			l, err := rt.Sessions.AcquireLease(ctx, in.SessionID, session.LeaseInput{Holder: in.Holder,
				TTL: time.Duration(in.TTLMs) * time.Millisecond})
			if err != nil {
				return nil, err
			}
			sess, err := rt.Sessions.Get(ctx, in.SessionID, 1<<62, 1)
			if err != nil {
				return nil, err
			}
			return SessionLease{LeaseID: l.LeaseID, LeaseToken: l.Token, Fence: l.Fence, ExpiresAt: wire.At(l.ExpiresAt), Revision: sess.Revision}, nil
		})
	addTool(sv, ToolAppendTurns, "Append turns to a session under its lease: the lease's fence and the session's expected revision (a stale fence is refused).",
		func(s *jsonschema.Schema) {
			turns := s.Properties["turns"]
			turns.MinItems, turns.MaxItems = ptr(1), ptr(session.MaxTurns)
			turns.Items.Properties["role"].Enum = []any{"user", "assistant", "tool", "system"}
		},
		func(ctx context.Context, in AppendInput) (any, error) {
			if _, err := sv.allowSession(ctx, in.SessionID); err != nil {
				return nil, err
			}
			turns := make([]session.TurnInput, len(in.Turns))
			for i, t := range in.Turns {
				turns[i] = wire.TextTurn(t.Role, t.Content)
			}
			out, err := rt.Sessions.Append(ctx, in.SessionID, session.WriteCondition{ExpectedRevision: &in.ExpectedRevision, Fence: &in.Fence}, turns)
			if err != nil {
				return nil, err
			}
			return out, nil
		})
	addTool(sv, ToolReleaseLease, "Release a session's lease (its token).", nil,
		func(ctx context.Context, in ReleaseInput) (any, error) {
			if _, err := sv.allowSession(ctx, in.SessionID); err != nil {
				return nil, err
			}
			if err := rt.Sessions.ReleaseLease(ctx, in.SessionID, in.LeaseToken); err != nil {
				return nil, err
			}
			return map[string]bool{"released": true}, nil
		})
}

// addTool adds a tool whose input schema is In's, made exact and then
// adjusted by tune; h's answer is the structured content, its error a
// tool error carrying promptd's problem.
func addTool[In any](sv *server, name, desc string, tune func(*jsonschema.Schema), h func(context.Context, In) (any, error)) {
	s, err := InputSchema[In]()
	if err != nil {
		panic("mcpserver: the schema of " + name + ": " + err.Error())
	}
	if tune != nil {
		tune(s)
	}
	mcp.AddTool(sv.srv, &mcp.Tool{Name: name, Description: desc, InputSchema: s},
		func(ctx context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
			out, err := h(sv.ctx(ctx), in)
			if err != nil {
				return toolError(err), nil, nil
			}
			b, err := json.Marshal(out)
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{StructuredContent: json.RawMessage(b), Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
		})
}

// InputSchema is the exact JSON Schema of a tool input type: inferred
// from T, every property of one type (no null: an absent optional member
// is its default), required the members without omitempty, no other
// member allowed.
func InputSchema[T any]() (*jsonschema.Schema, error) {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, err
	}
	exact(s)
	return s, nil
}

// exact drops "null" from the types of s and its members, and refuses
// members not declared (jsonschema.For already does so for structs).
func exact(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) > 0 {
		var ts []string
		for _, t := range s.Types {
			if t != "null" {
				ts = append(ts, t)
			}
		}
		if len(ts) == 1 {
			s.Type, s.Types = ts[0], nil
		} else {
			s.Types = ts
		}
	}
	if s.Type == "object" && s.Properties != nil && s.AdditionalProperties == nil {
		s.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
	}
	for _, p := range s.Properties {
		exact(p)
	}
	exact(s.Items)
}

func bound(s *jsonschema.Schema, prop string, lo, hi float64) {
	p := s.Properties[prop]
	p.Minimum, p.Maximum = &lo, &hi
}

func ptr[T any](v T) *T { return &v }

// toolError is err as a tool error: isError, promptd's problem as the
// structured content, "code: detail" as the text.
func toolError(err error) *mcp.CallToolResult {
	p := problem.Of(err)
	body := problemBody(p)
	b, _ := json.Marshal(body)
	return &mcp.CallToolResult{IsError: true, StructuredContent: json.RawMessage(b),
		Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s: %s", p.Code, body["detail"])}}}
}

// allowBoard checks board against the token's scopes (the HTTP API's
// rule for /v1/boards/{board}).
func (sv *server) allowBoard(name string) error {
	if !sv.token.Scopes.Allows(access.KindBoard, name) {
		return outOfScope("boards", "board %q is outside token %q's scopes", name, sv.token.Name)
	}
	return nil
}

// allowSession checks the session's agent and env against the token's
// scopes (the HTTP API's rule for /v1/sessions/{id}).
func (sv *server) allowSession(ctx context.Context, id string) (*session.Session, error) {
	sess, err := sv.s.rt.Sessions.Get(ctx, id, 1<<62, 1)
	if err != nil {
		return nil, err
	}
	if !sv.token.Scopes.Allows(access.KindAgent, sess.Agent) {
		return nil, outOfScope("agents", "agent %q is outside token %q's scopes", sess.Agent, sv.token.Name)
	}
	if !sv.token.Scopes.Allows(access.KindEnv, sess.Env) {
		return nil, outOfScope("envs", "env %q is outside token %q's scopes", sess.Env, sv.token.Name)
	}
	return sess, nil
}
