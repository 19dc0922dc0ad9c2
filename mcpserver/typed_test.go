package mcpserver_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptd/promptd/mcpserver"
)

const typedConfig = `{"system": "seats={{seats}} trial={{trial}} plan={{plan}} regions={{regions}}", "variables": {
	"seats": {"type": "number", "required": true, "description": "licensed seats"},
	"trial": {"type": "boolean", "default": false},
	"plan": {"type": "enum", "values": ["free", "pro"], "default": "free"},
	"regions": {"type": "string_list", "required": true}}}`

// MCP arguments are strings: each argument's description says its
// declared type, and the string is read as that type; a string that is
// not one is assemble's 422 invalid_variable, naming the variable.
func TestMCPPrompts_typedVariables_describedAndParsed(t *testing.T) {
	rt, ctx := open(t)
	publish(t, ctx, rt, "billing", "prod", typedConfig)
	cs := connect(t, ctx, mcpserver.New(rt, mcpserver.Options{}), admin, "prod", nil)

	list, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(list.Prompts) != 1 {
		t.Fatalf("list = %+v, %v", list, err)
	}
	var args []string
	for _, a := range list.Prompts[0].Arguments {
		args = append(args, a.Name+": "+a.Description)
	}
	want := []string{"plan: type enum, one of: free, pro; default \"free\"",
		"regions: type string_list: a JSON array of strings, or the items separated by commas",
		"seats: licensed seats; type number: a JSON number", "trial: type boolean: true or false; default false"}
	if !slices.Equal(args, want) {
		t.Fatalf("arguments:\n%s\nwant\n%s", strings.Join(args, "\n"), strings.Join(want, "\n"))
	}

	for in, text := range map[[2]string]string{
		{"3", "eu, us"}:      "seats=3 trial=false plan=free regions=eu, us",
		{"1.50", `["a, b"]`}: "seats=1.5 trial=false plan=free regions=a, b",
	} {
		got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "billing", Arguments: map[string]string{"seats": in[0], "regions": in[1]}})
		if err != nil {
			t.Fatalf("%v: %v", in, err)
		}
		if m := got.Messages[0].Content.(*mcp.TextContent).Text; m != mcpserver.SystemMarker+text {
			t.Errorf("%v: system = %q, want %q", in, m, text)
		}
	}
	got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "billing", Arguments: map[string]string{"seats": "2", "regions": "x", "trial": "true", "plan": "pro"}})
	if err != nil || got.Messages[0].Content.(*mcp.TextContent).Text != mcpserver.SystemMarker+"seats=2 trial=true plan=pro regions=x" {
		t.Fatalf("every argument given: %+v, %v", got, err)
	}
	for name, args := range map[string]map[string]string{
		"seats": {"seats": "three", "regions": "x"},
		"trial": {"seats": "1", "regions": "x", "trial": "yes"},
		"plan":  {"seats": "1", "regions": "x", "plan": "gold"},
	} {
		_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "billing", Arguments: args})
		if err == nil || !strings.Contains(err.Error(), "invalid_variable") || !strings.Contains(err.Error(), "variable "+name+" ") {
			t.Errorf("%v: err = %v, want invalid_variable naming %s", args, err, name)
		}
	}
}
