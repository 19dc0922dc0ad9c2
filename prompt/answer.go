package prompt

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Output formats of an assembly.
const (
	FormatPlain  = "plain"  // promptd's own answer (the default)
	FormatOpenAI = "openai" // the body of an OpenAI Chat Completions request
)

// ParseFormat checks a format name; "" is plain.
func ParseFormat(field, s string) (string, error) {
	switch s {
	case "", FormatPlain:
		return FormatPlain, nil
	case FormatOpenAI:
		return FormatOpenAI, nil
	}
	return "", invalid(CodeInvalidField, field, "format must be plain or openai")
}

// Assembled is what a runtime sends to its model, in promptd's plain
// shape.
type Assembled struct {
	Version      int               `json:"version"`
	ContentHash  string            `json:"content_hash"`
	Messages     []Message         `json:"messages"`
	Tools        []json.RawMessage `json:"tools"`
	Model        json.RawMessage   `json:"model"`
	Release      *Trace            `json:"release"`
	Pinned       bool              `json:"pinned"`
	RepinnedFrom *int              `json:"repinned_from,omitempty"`
}

// Assemble is the plain answer for a resolved version: cfg's messages
// with history appended (already cut), its tools ([] without) and model
// (null without). The caller fills Release, Pinned and RepinnedFrom.
func Assemble(cfg *Config, version int, contentHash string, vars map[string]string, history []Message) *Assembled {
	a := &Assembled{Version: version, ContentHash: contentHash, Messages: cfg.Conversation(vars, history),
		Tools: cfg.Tools, Model: cfg.Model}
	if a.Tools == nil {
		a.Tools = []json.RawMessage{}
	}
	if a.Model == nil {
		a.Model = json.RawMessage("null")
	}
	return a
}

// Body encodes the answer in a format: plain is a JSON of Assembled;
// openai is {"model": model.name, the other model keys at the top level
// as written, "messages", "tools" (left out when there are none)}.
// Without a model name the openai body is a *InvalidError
// (invalid_config, config.model.name). The bytes end with a newline; the
// server answers exactly these bytes.
func (a *Assembled) Body(format string) ([]byte, error) {
	if format == FormatOpenAI {
		return a.openAI()
	}
	return encode(a)
}

func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// openAIHeads memoizes the start of the openai body per model object
// (`{"model":"<name>",<other keys>`): configs are immutable, so a model's
// head never changes, and computing it parses the model each time.
var openAIHeads = struct {
	sync.Mutex
	m map[string][]byte
}{m: map[string][]byte{}}

// maxOpenAIHeads bounds the memo; past it, it starts over.
const maxOpenAIHeads = 4096

func (a *Assembled) openAI() ([]byte, error) {
	openAIHeads.Lock()
	head, ok := openAIHeads.m[string(a.Model)]
	openAIHeads.Unlock()
	if !ok {
		var err error
		if head, err = openAIHead(a.Model); err != nil {
			return nil, err
		}
		openAIHeads.Lock()
		if len(openAIHeads.m) >= maxOpenAIHeads {
			clear(openAIHeads.m)
		}
		openAIHeads.m[string(a.Model)] = head
		openAIHeads.Unlock()
	}
	b := bytes.NewBuffer(make([]byte, 0, len(head)+512))
	b.Write(head)
	msgs, err := encode(a.Messages)
	if err != nil {
		return nil, err
	}
	b.WriteString(`,"messages":`)
	b.Write(bytes.TrimSuffix(msgs, []byte("\n")))
	if len(a.Tools) > 0 {
		tools, err := encode(a.Tools)
		if err != nil {
			return nil, err
		}
		b.WriteString(`,"tools":`)
		b.Write(bytes.TrimSuffix(tools, []byte("\n")))
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}

// openAIHead is `{"model":"<model.name>"` and the model's other keys at
// the top level, sorted, values as written, model.extra's keys among them;
// a model without a name, or with a key the body sets itself, is
// invalid_config.
func openAIHead(modelJSON json.RawMessage) ([]byte, error) {
	var model map[string]json.RawMessage
	if len(modelJSON) > 0 && modelJSON[0] == '{' {
		if err := json.Unmarshal(modelJSON, &model); err != nil {
			return nil, err
		}
	}
	var name string
	if raw, ok := model["name"]; !ok || json.Unmarshal(raw, &name) != nil || name == "" {
		return nil, invalid(CodeInvalidConfig, "config.model.name", "the openai format needs model.name, a non-empty string")
	}
	for _, k := range ReservedModelKeys {
		if _, ok := model[k]; ok {
			return nil, invalid(CodeInvalidConfig, "config.model."+k, "model may not set %s in the openai format", k)
		}
	}
	// model.extra's keys go to the top level beside the others (a
	// provider's own parameters); the rest as written.
	var extra map[string]json.RawMessage
	if raw, ok := model["extra"]; ok {
		if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &extra) != nil {
			return nil, invalid(CodeInvalidConfig, "config.model.extra", "model.extra must be an object")
		}
		if err := checkExtra(model, extra); err != nil {
			return nil, err
		}
		delete(model, "extra")
		for k, v := range extra {
			model[k] = v
		}
	}
	keys := make([]string, 0, len(model))
	for k := range model {
		if k != "name" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b bytes.Buffer
	b.WriteString(`{"model":`)
	b.Write(jsonString(name))
	for _, k := range keys {
		b.WriteByte(',')
		b.Write(jsonString(k))
		b.WriteByte(':')
		if err := json.Compact(&b, model[k]); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

// VersionHeader is the Promptd-Version header: "<agent>/<env>/<version>".
func VersionHeader(agent, env string, version int) string {
	return agent + "/" + env + "/" + strconv.Itoa(version)
}

// ReleaseHeader is the Promptd-Release header for a trace, an RFC 8941
// dictionary: id="rel_1", arm=candidate, bucket=771, reason=bucket
// (bucket left out when there was no key). "" for no trace.
func (t *Trace) ReleaseHeader() string {
	if t == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString(`id="`)
	for i := 0; i < len(t.ID); i++ {
		if t.ID[i] == '"' || t.ID[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(t.ID[i])
	}
	b.WriteString(`", arm=`)
	b.WriteString(t.Arm)
	if t.Bucket != nil {
		b.WriteString(", bucket=")
		b.WriteString(strconv.Itoa(*t.Bucket))
	}
	if t.Reason != "" {
		b.WriteString(", reason=")
		b.WriteString(t.Reason)
	}
	return b.String()
}
