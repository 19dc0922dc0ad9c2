package wire

// IntentScope is what an intent covers: agents (names, or prefixes ending
// in '*') in envs (none: every env), whole boards, and records of boards
// by id or id prefix.
type IntentScope struct {
	Agents  []string            `json:"agents,omitempty"`
	Envs    []string            `json:"envs,omitempty"`
	Boards  []string            `json:"boards,omitempty"`
	Records []IntentRecordScope `json:"records,omitempty"`
}

// IntentRecordScope is records of one board: ids and id prefixes.
type IntentRecordScope struct {
	Board    string   `json:"board"`
	IDs      []string `json:"ids,omitempty"`
	Prefixes []string `json:"prefixes,omitempty"`
}

// Intent is a registered intent: schema Intent.
type Intent struct {
	ID          string      `json:"id"`
	Holder      string      `json:"holder"`
	Mode        string      `json:"mode"` // exclusive, advisory
	Scope       IntentScope `json:"scope"`
	Description string      `json:"description"`
	Fence       int64       `json:"fence"`
	State       string      `json:"state"` // active, released, expired
	TTLMs       int64       `json:"ttl_ms"`
	ExpiresAt   Time        `json:"expires_at"`
	EndedAt     *Time       `json:"ended_at,omitempty"`
	CreatedBy   string      `json:"created_by"`
	CreatedAt   Time        `json:"created_at"`
}

// IntentRef names the intent a write is made under, with its fence.
type IntentRef struct {
	ID    string `json:"id"`
	Fence int64  `json:"fence"`
}

// RegisteredIntent is the answer to a registration: the intent and every
// live intent whose scope overlaps it.
type RegisteredIntent struct {
	Intent
	Overlaps []Intent `json:"overlaps"`
}
