package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/problem"
	"github.com/promptd/promptd/prompt"
	"github.com/promptd/promptd/promptstore"
)

// The markers that begin the text of a message whose promptd role MCP
// does not have (see the package doc: Roles).
const (
	SystemMarker = "[system]\n"
	ToolMarker   = "[tool]\n"
)

// agentsPage is how many agents one list query reads.
const agentsPage = 200

// syncAll re-reads every agent of the server's env and replaces the
// server's prompts with them.
func (sv *server) syncAll(ctx context.Context) error {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	page := promptstore.Page{Limit: agentsPage, Agents: sv.token.Scopes.Names(access.KindAgent)}
	seen := map[string]bool{}
	var add []*mcp.Prompt
	for {
		as, next, err := sv.s.rt.Prompts.ListAgents(ctx, page)
		if err != nil {
			return err
		}
		for _, a := range as {
			if _, ok := a.Envs[sv.env]; !ok || !sv.token.Scopes.Allows(access.KindAgent, a.Agent) {
				continue
			}
			p, err := sv.describe(ctx, a.Agent)
			if err != nil {
				return err
			}
			if p != nil {
				seen[a.Agent] = true
				add = append(add, p)
			}
		}
		if next == "" {
			break
		}
		page.Cursor = next
	}
	var gone []string
	for name := range sv.prompts {
		if !seen[name] {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		sv.srv.RemovePrompts(gone...)
	}
	for _, p := range add {
		sv.srv.AddPrompt(p, sv.getPrompt(p.Name))
	}
	sv.prompts = seen
	return nil
}

// syncOne re-reads one agent.
func (sv *server) syncOne(ctx context.Context, agent string) error {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	p, err := sv.describe(ctx, agent)
	if err != nil {
		return err
	}
	if p == nil {
		delete(sv.prompts, agent)
		sv.srv.RemovePrompts(agent)
		return nil
	}
	sv.prompts[agent] = true
	sv.srv.AddPrompt(p, sv.getPrompt(agent))
	return nil
}

// describe is agent's prompt in the server's env: its arguments are the
// declared variables of the version the env resolves to. Nil when the
// agent has no version there (no pointer, or it is out of scope).
func (sv *server) describe(ctx context.Context, agent string) (*mcp.Prompt, error) {
	if !sv.token.Scopes.Allows(access.KindAgent, agent) {
		return nil, nil
	}
	p, err := sv.s.rt.Prompt(ctx, promptstore.Request{Agent: agent, Env: sv.env})
	if err != nil {
		switch problem.Of(err).Code {
		case problem.AgentNotFound, problem.NoPointer, problem.NotFound, problem.VersionNotFound, problem.VersionRevoked:
			return nil, nil
		}
		return nil, err
	}
	cfg := p.Snapshot.Parsed
	out := &mcp.Prompt{Name: agent, Title: agent + " (" + sv.env + ")",
		Description: fmt.Sprintf("promptd agent %s in env %s: version %d (%s)", agent, sv.env, p.Version, p.Snapshot.ContentHash),
		Arguments:   []*mcp.PromptArgument{}}
	for _, name := range slices.Sorted(maps.Keys(cfg.Variables)) {
		d := cfg.Variables[name]
		out.Arguments = append(out.Arguments, &mcp.PromptArgument{Name: name, Description: describe(d), Required: d.Required && !hasDefault(d)})
	}
	return out, nil
}

// getPrompt answers prompts/get for agent: the assembled messages.
func (sv *server) getPrompt(agent string) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		ctx = sv.ctx(ctx)
		if !sv.token.Scopes.Allows(access.KindAgent, agent) {
			return nil, promptError(outOfScope("agents", "agent %q is outside token %q's scopes", agent, sv.token.Name))
		}
		vars, err := sv.variables(ctx, agent, req.Params.Arguments)
		if err != nil {
			return nil, promptError(err)
		}
		a, err := sv.s.rt.Assemble(ctx, promptstore.AssembleInput{Request: promptstore.Request{Agent: agent, Env: sv.env}, Variables: vars})
		if err != nil {
			return nil, promptError(err)
		}
		out := &mcp.GetPromptResult{
			Description: fmt.Sprintf("promptd agent %s in env %s: version %d", agent, sv.env, a.Version),
			Messages:    make([]*mcp.PromptMessage, 0, len(a.Messages)),
		}
		roles := make([]string, 0, len(a.Messages))
		for _, m := range a.Messages {
			roles = append(roles, m.Role)
			out.Messages = append(out.Messages, promptMessage(m.Role, m.Content))
		}
		out.Meta = mcp.Meta{"promptd/agent": agent, "promptd/env": sv.env, "promptd/version": a.Version,
			"promptd/content_hash": a.ContentHash, "promptd/roles": roles}
		return out, nil
	}
}

// promptMessage maps one assembled message to MCP's roles (package doc:
// Roles). A content that is not a string (parts) is its JSON text.
func promptMessage(role string, content json.RawMessage) *mcp.PromptMessage {
	var text string
	if err := json.Unmarshal(content, &text); err != nil {
		text = string(content)
	}
	switch role {
	case "assistant":
		return &mcp.PromptMessage{Role: "assistant", Content: &mcp.TextContent{Text: text}}
	case "system":
		text = SystemMarker + text
	case "tool":
		text = ToolMarker + text
	}
	return &mcp.PromptMessage{Role: "user", Content: &mcp.TextContent{Text: text}}
}

// promptError is err as a JSON-RPC error: a client's mistake (a missing
// or invalid variable) is invalid params, the rest internal; the message
// starts with promptd's code and the data is its problem.
func promptError(err error) error {
	p := problem.Of(err)
	code := int64(jsonrpc.CodeInternalError)
	if s := p.Status(); s >= 400 && s < 500 {
		code = jsonrpc.CodeInvalidParams
	}
	detail := p.Detail
	if p.Code == problem.Internal {
		detail = "an unexpected error occurred"
	}
	data, _ := json.Marshal(problemBody(p))
	return &jsonrpc.Error{Code: code, Message: p.Code + ": " + detail, Data: data}
}

// problemBody is p as a tool error's structured content and a prompt
// error's data: code, status, detail and p's extra members.
func problemBody(p *problem.Problem) map[string]any {
	out := map[string]any{}
	for k, v := range p.Fields {
		out[k] = v
	}
	out["code"], out["status"], out["detail"] = p.Code, p.Status(), p.Detail
	if p.Code == problem.Internal {
		out["detail"] = "an unexpected error occurred"
	}
	return out
}

// outOfScope is promptd's 403 forbidden naming the scope lacked.
func outOfScope(scope, format string, args ...any) error {
	return problem.OutOfScope(scope, fmt.Sprintf(format, args...))
}

func hasDefault(d prompt.Variable) bool { return len(d.Default) > 0 && string(d.Default) != "null" }

// describe is the argument's description: the declaration's, then its
// type (MCP arguments are strings: how the string is read), an enum's
// values and the default.
func describe(d prompt.Variable) string {
	var parts []string
	if d.Description != "" {
		parts = append(parts, d.Description)
	}
	switch d.Kind() {
	case prompt.TypeEnum:
		parts = append(parts, "type enum, one of: "+strings.Join(d.Values, ", "))
	case prompt.TypeStringList:
		parts = append(parts, "type string_list: a JSON array of strings, or the items separated by commas")
	case prompt.TypeNumber:
		parts = append(parts, "type number: a JSON number")
	case prompt.TypeBoolean:
		parts = append(parts, "type boolean: true or false")
	}
	if hasDefault(d) {
		parts = append(parts, "default "+string(d.Default))
	}
	return strings.Join(parts, "; ")
}

// variables are a prompts/get's string arguments as assemble's
// variables, each read as its variable's type (prompt.Variable's
// ParseArgument: a number's JSON literal, true or false, a list as a
// JSON array or comma-separated); an argument that does not parse, or an
// undeclared one, goes as the string, which assemble refuses as
// invalid_variable naming it (or ignores, undeclared).
func (sv *server) variables(ctx context.Context, agent string, args map[string]string) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(args))
	var decls map[string]prompt.Variable
	for k, v := range args {
		b, _ := json.Marshal(v) // a string always encodes
		out[k] = b
		if decls == nil {
			p, err := sv.s.rt.Prompt(ctx, promptstore.Request{Agent: agent, Env: sv.env})
			if err != nil {
				return nil, err
			}
			decls = p.Snapshot.Parsed.Variables
			if decls == nil {
				decls = map[string]prompt.Variable{}
			}
		}
		if d, ok := decls[k]; ok {
			if raw, err := d.ParseArgument(v); err == nil {
				out[k] = raw
			}
		}
	}
	return out, nil
}
