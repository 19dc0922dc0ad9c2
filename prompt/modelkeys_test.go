package prompt

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
)

// TestModelKeys_areTheFieldsOfOpenAIsChatCompletionNewParams: the list a
// publish checks is openai-go's, less the keys promptd assembles.
func TestModelKeys_areTheFieldsOfOpenAIsChatCompletionNewParams(t *testing.T) {
	ty := reflect.TypeOf(openai.ChatCompletionNewParams{})
	var fields []string
	for i := 0; i < ty.NumField(); i++ {
		name, _, _ := strings.Cut(ty.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" || reservedModelKey(name) {
			continue
		}
		fields = append(fields, name)
	}
	slices.Sort(fields)
	if !slices.Equal(fields, ModelKeys) {
		t.Errorf("ModelKeys = %v\nopenai-go ChatCompletionNewParams has %v", ModelKeys, fields)
	}
}

func TestParseConfig_unknownModelKey_isRefusedNamingTheClosest(t *testing.T) {
	for _, c := range []struct{ config, field, near string }{
		{`{"system":"s","model":{"name":"m","temprature":0.2}}`, "config.model.temprature", `"temperature"`},
		{`{"system":"s","model":{"name":"m","max_token":5}}`, "config.model.max_token", `"max_tokens"`},
		{`{"system":"s","model":{"name":"m","top_k":40}}`, "config.model.top_k", `"top_p"`},
		{`{"system":"s","model":{"name":"m","thinking_budget":40}}`, "config.model.thinking_budget", ""},
	} {
		_, _, err := ParseConfig([]byte(c.config))
		var ie *InvalidError
		if !errors.As(err, &ie) || ie.Code != CodeInvalidConfig || ie.Field != c.field {
			t.Errorf("%s: %v, want invalid_config at %s", c.config, err, c.field)
			continue
		}
		if c.near != "" && !strings.Contains(ie.Error(), "did you mean "+c.near) {
			t.Errorf("%s: %q names no %s", c.config, ie.Error(), c.near)
		}
		if c.near == "" && strings.Contains(ie.Error(), "did you mean") {
			t.Errorf("%s: %q guesses, and nothing is near", c.config, ie.Error())
		}
		if !strings.Contains(ie.Error(), "model.extra") {
			t.Errorf("%s: %q does not say where a provider's key goes", c.config, ie.Error())
		}
	}
	// Control: the known keys, and a provider's key under extra, publish.
	for _, ok := range []string{
		`{"system":"s","model":{"name":"m","temperature":0.2,"max_tokens":5,"reasoning_effort":"low"}}`,
		`{"system":"s","model":{"name":"m","extra":{"top_k":40,"safety_settings":[]}}}`,
		`{"system":"s"}`,
	} {
		if _, _, err := ParseConfig([]byte(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

func TestParseConfig_modelWithoutName_orABadExtra_isRefused(t *testing.T) {
	for _, c := range []struct{ config, field string }{
		{`{"system":"s","model":{"temperature":1}}`, "config.model.name"},
		{`{"system":"s","model":{"name":"m","extra":[1]}}`, "config.model.extra"},
		{`{"system":"s","model":{"name":"m","extra":"x"}}`, "config.model.extra"},
		{`{"system":"s","model":{"name":"m","extra":{"messages":[]}}}`, "config.model.extra.messages"},
		{`{"system":"s","model":{"name":"m","extra":{"name":"other"}}}`, "config.model.extra.name"},
		{`{"system":"s","model":{"name":"m","temperature":1,"extra":{"temperature":0}}}`, "config.model.extra.temperature"},
	} {
		_, _, err := ParseConfig([]byte(c.config))
		var ie *InvalidError
		if !errors.As(err, &ie) || ie.Field != c.field {
			t.Errorf("%s: %v, want invalid_config at %s", c.config, err, c.field)
		}
	}
}

func TestBody_openAI_putsExtraAtTheTopLevel(t *testing.T) {
	cfg, _, err := ParseConfig([]byte(`{"system":"s","model":{"name":"m","temperature":0.5,"extra":{"top_k":40,"a_first":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Assemble(cfg, 1, "h", nil, nil).Body(FormatOpenAI)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m","a_first":true,"temperature":0.5,"top_k":40,"messages":[{"role":"system","content":"s"}]}` + "\n"
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// A version published before the key check (an unknown key, a model
// without name) still loads and serves: the check is the publish's.
func TestLoad_configPublishedBeforeTheModelKeyCheck_stillServes(t *testing.T) {
	cfg, _, err := Load([]byte(`{"system":"s","model":{"name":"m","temprature":0.2}}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Assemble(cfg, 1, "h", nil, nil).Body(FormatOpenAI)
	if err != nil || !strings.Contains(string(got), `"temprature":0.2`) {
		t.Errorf("old version: %s, %v", got, err)
	}
}
