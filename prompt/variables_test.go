package prompt_test

import (
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/promptd/promptd/problem"
	"github.com/promptd/promptd/prompt"
)

const typed = `{"system": "n={{n}} b={{b}} e={{e}} l={{l}} s={{s}}", "variables": {
	"n": {"type": "number", "required": true},
	"b": {"type": "boolean", "default": false},
	"e": {"type": "enum", "values": ["free", "pro"], "default": "free"},
	"l": {"type": "string_list", "default": []},
	"s": {"description": "untyped: a string"}}}`

func bind(t *testing.T, config string, vars string) (map[string]string, error) {
	t.Helper()
	c, _, err := prompt.ParseConfig([]byte(config))
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(vars), &m); err != nil {
		t.Fatal(err)
	}
	return c.Bind(m)
}

func TestBind_typedValues_renderOneWay(t *testing.T) {
	for _, tc := range []struct{ vars, n, b, e, l string }{
		{`{"n": 3}`, "3", "false", "free", ""},
		{`{"n": 1.50, "b": true, "e": "pro", "l": ["a", "b c"]}`, "1.5", "true", "pro", "a, b c"},
		{`{"n": -0}`, "0", "false", "free", ""},
		{`{"n": 1e3}`, "1000", "false", "free", ""},
		{`{"n": 1e21}`, "1e+21", "false", "free", ""},
		{`{"n": 0.0000001}`, "1e-7", "false", "free", ""},
		{`{"n": 0.000001}`, "0.000001", "false", "free", ""},
		{`{"n": 12345678901234567890}`, "12345678901234567000", "false", "free", ""},
		{`{"n": 2, "b": null, "e": null}`, "2", "false", "free", ""},
	} {
		got, err := bind(t, typed, tc.vars)
		if err != nil {
			t.Errorf("%s: %v", tc.vars, err)
			continue
		}
		if got["n"] != tc.n || got["b"] != tc.b || got["e"] != tc.e || got["l"] != tc.l {
			t.Errorf("%s: n=%q b=%q e=%q l=%q, want %q %q %q %q", tc.vars, got["n"], got["b"], got["e"], got["l"], tc.n, tc.b, tc.e, tc.l)
		}
	}
}

// Every wrong or missing value is a 422 naming its variable.
func TestBind_wrongOrMissingValue_namesTheVariable(t *testing.T) {
	for _, tc := range []struct{ vars, code, variable string }{
		{`{}`, prompt.CodeMissingVariable, "n"},
		{`{"n": null}`, prompt.CodeMissingVariable, "n"},
		{`{"n": "3"}`, prompt.CodeInvalidVariable, "n"},
		{`{"n": true}`, prompt.CodeInvalidVariable, "n"},
		{`{"n": 1e400}`, prompt.CodeInvalidVariable, "n"},
		{`{"n": 1, "b": "true"}`, prompt.CodeInvalidVariable, "b"},
		{`{"n": 1, "b": 1}`, prompt.CodeInvalidVariable, "b"},
		{`{"n": 1, "e": "enterprise"}`, prompt.CodeInvalidVariable, "e"},
		{`{"n": 1, "e": 1}`, prompt.CodeInvalidVariable, "e"},
		{`{"n": 1, "l": "a, b"}`, prompt.CodeInvalidVariable, "l"},
		{`{"n": 1, "l": ["a", null]}`, prompt.CodeInvalidVariable, "l"},
		{`{"n": 1, "l": ["a", 2]}`, prompt.CodeInvalidVariable, "l"},
		{`{"n": 1, "s": 5}`, prompt.CodeInvalidVariable, "s"},
		{`{"n": 1, "s": ["x"]}`, prompt.CodeInvalidVariable, "s"},
	} {
		_, err := bind(t, typed, tc.vars)
		var ie *prompt.InvalidError
		if !errors.As(err, &ie) || ie.Code != tc.code || ie.Variable != tc.variable || ie.Field != "variables."+tc.variable {
			t.Errorf("%s: err = %v, want %s naming %s", tc.vars, err, tc.code, tc.variable)
		}
		if ie != nil && problem.Codes[ie.Code] != 422 {
			t.Errorf("%s: %s is status %d, want 422", tc.vars, ie.Code, problem.Codes[ie.Code])
		}
	}
	// The control: the same config binds with good values.
	if _, err := bind(t, typed, `{"n": 1, "b": true, "e": "pro", "l": ["x"], "s": "y"}`); err != nil {
		t.Errorf("good values: %v", err)
	}
}

func TestParseConfig_variableDeclarations_areChecked(t *testing.T) {
	for _, tc := range []struct{ decl, field string }{
		{`{"type": "integer"}`, "config.variables.v.type"},
		{`{"type": "enum"}`, "config.variables.v.values"},
		{`{"type": "enum", "values": []}`, "config.variables.v.values"},
		{`{"type": "string", "values": ["a"]}`, "config.variables.v.values"},
		{`{"type": "enum", "values": ["a", "a"]}`, "config.variables.v.values[1]"},
		{`{"type": "enum", "values": [""]}`, "config.variables.v.values[0]"},
		{`{"type": "enum", "values": ["a"], "default": "b"}`, "config.variables.v.default"},
		{`{"type": "number", "default": "1"}`, "config.variables.v.default"},
		{`{"type": "boolean", "default": 0}`, "config.variables.v.default"},
		{`{"type": "string_list", "default": "a"}`, "config.variables.v.default"},
		{`{"default": 1}`, "config.variables.v.default"},
	} {
		_, _, err := prompt.ParseConfig([]byte(`{"system": "{{v}}", "variables": {"v": ` + tc.decl + `}}`))
		var ie *prompt.InvalidError
		if !errors.As(err, &ie) || ie.Code != prompt.CodeInvalidConfig || ie.Field != tc.field {
			t.Errorf("%s: err = %v, want invalid_config at %s", tc.decl, err, tc.field)
		}
	}
	for _, ok := range []string{`{"type": "number", "default": 2.5}`, `{"type": "enum", "values": ["a", "b"], "default": "b"}`,
		`{"type": "string_list", "default": ["x"]}`, `{"type": "string", "default": "s"}`, `{"default": null}`} {
		if _, _, err := prompt.ParseConfig([]byte(`{"system": "{{v}}", "variables": {"v": ` + ok + `}}`)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

func TestFormatNumber_isECMAScriptsToString(t *testing.T) {
	for f, want := range map[float64]string{0: "0", math.Copysign(0, -1): "0", 1: "1", -2.5: "-2.5", 0.1: "0.1", 1e20: "100000000000000000000",
		1e21: "1e+21", 1.5e-7: "1.5e-7", 123456789.125: "123456789.125", 5e-324: "5e-324", math.MaxFloat64: "1.7976931348623157e+308", 1 << 60: "1152921504606847000", 1.23e27: "1.23e+27"} {
		if got := prompt.FormatNumber(f); got != want {
			t.Errorf("FormatNumber(%v) = %q, want %q", f, got, want)
		}
	}
}

func TestParseArgument_turnsStringsIntoTypedValues(t *testing.T) {
	c, _, err := prompt.ParseConfig([]byte(typed))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, in, want string }{
		{"n", " 2.5 ", "2.5"}, {"b", "true", "true"}, {"e", "pro", `"pro"`}, {"l", "a, b ,, c", `["a","b","c"]`},
		{"l", `["x, y"]`, `["x, y"]`}, {"s", "hi \"there\"", `"hi \"there\""`},
	} {
		got, err := c.Variables[tc.name].ParseArgument(tc.in)
		if err != nil || string(got) != tc.want {
			t.Errorf("%s %q: %s, %v; want %s", tc.name, tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ name, in string }{{"n", "two"}, {"n", "0x10"}, {"b", "yes"}, {"l", "[1]"}} {
		if got, err := c.Variables[tc.name].ParseArgument(tc.in); err == nil {
			t.Errorf("%s %q: %s, want an error", tc.name, tc.in, got)
		}
	}
}
