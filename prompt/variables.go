package prompt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Variable types. An untyped variable ("") is a string, as before types
// existed.
const (
	TypeString     = "string"
	TypeNumber     = "number"
	TypeBoolean    = "boolean"
	TypeEnum       = "enum"
	TypeStringList = "string_list"
)

// VariableTypes are the types a declared variable may have.
var VariableTypes = []string{TypeString, TypeNumber, TypeBoolean, TypeEnum, TypeStringList}

// Limits on a variable declaration and on a value.
const (
	MaxEnumValues      = 256  // an enum's values
	MaxEnumValueBytes  = 256  // one enum value
	MaxListItems       = 1024 // a string_list value's items
	MaxDescriptionSize = 4096 // a variable's description, in bytes
)

// Kind is the variable's type, "string" when it declares none.
func (v Variable) Kind() string {
	if v.Type == "" {
		return TypeString
	}
	return v.Type
}

// validate checks one declaration: a known type, values exactly for an
// enum, a default of the variable's type.
func (v Variable) validate(name string) error {
	field := "config.variables." + name
	if v.Type != "" && !slices.Contains(VariableTypes, v.Type) {
		return invalid(CodeInvalidConfig, field+".type", "type must be one of %s", strings.Join(VariableTypes, ", "))
	}
	if len(v.Description) > MaxDescriptionSize {
		return invalid(CodeInvalidConfig, field+".description", "description is at most %d bytes", MaxDescriptionSize)
	}
	switch {
	case v.Type == TypeEnum && len(v.Values) == 0:
		return invalid(CodeInvalidConfig, field+".values", "an enum declares its values")
	case v.Type != TypeEnum && v.Values != nil:
		return invalid(CodeInvalidConfig, field+".values", "values are an enum's (type: enum)")
	case len(v.Values) > MaxEnumValues:
		return invalid(CodeInvalidConfig, field+".values", "at most %d values", MaxEnumValues)
	}
	for i, s := range v.Values {
		f := fmt.Sprintf("%s.values[%d]", field, i)
		switch {
		case s == "":
			return invalid(CodeInvalidConfig, f, "an enum value is not empty")
		case len(s) > MaxEnumValueBytes:
			return invalid(CodeInvalidConfig, f, "an enum value is at most %d bytes", MaxEnumValueBytes)
		case slices.Contains(v.Values[:i], s):
			return invalid(CodeInvalidConfig, f, "value %q is listed twice", s)
		}
	}
	if len(v.Default) > 0 && string(v.Default) != "null" {
		if _, err := v.render(v.Default); err != nil {
			return invalid(CodeInvalidConfig, field+".default", "the default must be %s", v.expected())
		}
	}
	return nil
}

// hasDefault reports a default other than null.
func (v Variable) hasDefault() bool { return len(v.Default) > 0 && string(v.Default) != "null" }

// expected says what a value of the variable's type is, for errors.
func (v Variable) expected() string {
	switch v.Kind() {
	case TypeNumber:
		return "a number"
	case TypeBoolean:
		return "true or false"
	case TypeEnum:
		return "one of " + strings.Join(v.Values, ", ")
	case TypeStringList:
		return fmt.Sprintf("a list of at most %d strings", MaxListItems)
	}
	return "a string"
}

var errMistyped = fmt.Errorf("prompt: a value of the wrong type")

// render is a value's text in a template, defined once for every
// evaluator: a string as it is; a number as ECMAScript's Number::toString
// writes the double it denotes (JSON.stringify's form: 1.50 -> 1.5, 1e3 ->
// 1000, 1e21 -> 1e+21; an evaluator given a parsed number has no literal
// left to repeat, so this is what all of them can agree on); a boolean as
// true or false; an enum as its value; a string list joined by ", ".
func (v Variable) render(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	switch v.Kind() {
	case TypeNumber:
		if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
			return "", errMistyped
		}
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return "", errMistyped // out of a double's range
		}
		return FormatNumber(f), nil
	case TypeBoolean:
		switch string(raw) {
		case "true", "false":
			return string(raw), nil
		}
		return "", errMistyped
	case TypeStringList:
		var items []json.RawMessage
		if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &items) != nil || len(items) > MaxListItems {
			return "", errMistyped
		}
		texts := make([]string, len(items))
		for i, it := range items {
			if len(it) == 0 || it[0] != '"' || json.Unmarshal(it, &texts[i]) != nil {
				return "", errMistyped // null or not a string
			}
		}
		return strings.Join(texts, ", "), nil
	}
	if len(raw) == 0 || raw[0] != '"' {
		return "", errMistyped
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", errMistyped
	}
	if v.Kind() == TypeEnum && !slices.Contains(v.Values, s) {
		return "", errMistyped
	}
	return s, nil
}

// FormatNumber writes f as ECMAScript's Number::toString does (the
// shortest digits that round-trip; plain notation from 1e-6 up to 1e21,
// exponent notation beyond, "1e+21", "1.5e-7"; -0 as "0").
func FormatNumber(f float64) string {
	if f == 0 {
		return "0"
	}
	if abs := math.Abs(f); abs >= 1e21 || abs < 1e-6 {
		s := strconv.FormatFloat(f, 'e', -1, 64)
		mant, exp, _ := strings.Cut(s, "e")
		return mant + "e" + exp[:1] + strings.TrimLeft(exp[1:], "0")
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// ParseArgument turns a string given for a variable (an MCP prompt
// argument, a form field) into a JSON value of the variable's type: a
// number's JSON literal, true or false, an enum's value, and for a string
// list either a JSON array of strings or the items separated by commas
// (each trimmed, empty ones dropped). It does not check the value beyond
// its syntax: Bind does.
func (v Variable) ParseArgument(s string) (json.RawMessage, error) {
	switch v.Kind() {
	case TypeNumber, TypeBoolean:
		t := strings.TrimSpace(s)
		if _, err := v.render(json.RawMessage(t)); err != nil {
			return nil, fmt.Errorf("%q is not %s", s, v.expected())
		}
		return json.RawMessage(t), nil
	case TypeStringList:
		if t := strings.TrimSpace(s); strings.HasPrefix(t, "[") {
			if _, err := v.render(json.RawMessage(t)); err != nil {
				return nil, fmt.Errorf("%q is not %s", s, v.expected())
			}
			return json.RawMessage(t), nil
		}
		items := []string{}
		for _, it := range strings.Split(s, ",") {
			if it = strings.TrimSpace(it); it != "" {
				items = append(items, it)
			}
		}
		b, _ := json.Marshal(items)
		return b, nil
	}
	if !utf8.ValidString(s) {
		return nil, fmt.Errorf("not UTF-8")
	}
	b, _ := json.Marshal(s)
	return b, nil
}
