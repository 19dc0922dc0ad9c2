package prompt

import (
	"encoding/json"
	"fmt"
	"sort"
)

// ModelKeys are the keys a config's model may hold besides name and extra:
// the request fields of OpenAI's Chat Completions API (the JSON names of
// openai-go's ChatCompletionNewParams, less model, messages and tools,
// which promptd assembles itself). A test keeps the list equal to that
// struct's fields, so an upgrade of openai-go that adds one shows up.
//
// A provider's own keys (another vendor's sampling knobs, a gateway's
// routing hints) go under model.extra, an object whose keys the openai
// format puts at the top level of the request beside these.
var ModelKeys = []string{
	"audio", "frequency_penalty", "function_call", "functions", "logit_bias",
	"logprobs", "max_completion_tokens", "max_tokens", "metadata", "modalities",
	"moderation", "n", "parallel_tool_calls", "prediction", "presence_penalty",
	"prompt_cache_key", "prompt_cache_options", "prompt_cache_retention",
	"reasoning_effort", "response_format", "safety_identifier", "seed",
	"service_tier", "stop", "store", "stream_options", "temperature",
	"tool_choice", "top_logprobs", "top_p", "user", "verbosity",
	"web_search_options",
}

var modelKeySet = func() map[string]bool {
	m := make(map[string]bool, len(ModelKeys))
	for _, k := range ModelKeys {
		m[k] = true
	}
	return m
}()

func reservedModelKey(k string) bool {
	for _, r := range ReservedModelKeys {
		if r == k {
			return true
		}
	}
	return false
}

// checkModelKeys refuses, at publish, a model key that is neither name,
// extra nor one of ModelKeys (naming the closest known key: "temprature"
// is most likely temperature), an extra that is not an object, and an
// extra key that is reserved or would shadow a key set beside it.
func checkModelKeys(m map[string]json.RawMessage) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the first bad key, the same on every run
	for _, k := range keys {
		if k == "name" || k == "extra" || modelKeySet[k] {
			continue
		}
		msg := fmt.Sprintf("unknown model key %q", k)
		if near := closestModelKey(k); near != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", near)
		}
		return invalid(CodeInvalidConfig, "config.model."+k, "%s; a provider-specific key goes under model.extra", msg)
	}
	raw, ok := m["extra"]
	if !ok {
		return nil
	}
	var extra map[string]json.RawMessage
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &extra) != nil {
		return invalid(CodeInvalidConfig, "config.model.extra", "model.extra must be an object")
	}
	return checkExtra(m, extra)
}

// checkExtra is the rule the openai format applies to model.extra, at
// publish and (for versions published before the rule) at assembly.
func checkExtra(model, extra map[string]json.RawMessage) error {
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch {
		case reservedModelKey(k) || k == "name" || k == "extra":
			return invalid(CodeInvalidConfig, "config.model.extra."+k, "model.extra may not set %s: promptd assembles it", k)
		case model[k] != nil:
			return invalid(CodeInvalidConfig, "config.model.extra."+k, "model.extra.%s would shadow model.%s: set it once", k, k)
		}
	}
	return nil
}

// closestModelKey is the known key nearest to k in edits, when near
// enough to be a typo (at most a third of k's length, and 3), else "".
func closestModelKey(k string) string {
	best, bestD := "", len(k)/3+1
	if bestD > 4 {
		bestD = 4
	}
	for _, c := range append([]string{"name", "extra"}, ModelKeys...) {
		if d := editDistance(k, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of two short ASCII keys.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
