package board

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/promptd/promptd/ident"
	"github.com/promptd/promptd/wire"
)

// Limits of a definition.
const (
	MaxStates       = 32
	MinClaimTTL     = 100 * time.Millisecond
	MaxClaimTTL     = time.Hour
	DefaultClaimTTL = 30 * time.Second
	MaxAttempts     = 1000
)

// Definition is a board's state machine, checked on every write.
type Definition struct {
	States      []string            `json:"states"`
	Initial     string              `json:"initial"`
	Transitions map[string][]string `json:"transitions"`
	Claim       ClaimRule           `json:"claim"`
	Terminal    []string            `json:"terminal"`
	Quota       Quota               `json:"quota"`
}

// ClaimRule says what a claim does: From -> To for TTLMs; an expired
// claim goes back to ReclaimTo, or to Exhausted once the record was
// claimed MaxAttempts times.
type ClaimRule = wire.ClaimRule

// Quota limits claims per actor (token) per minute, cluster-wide; 0: none.
type Quota = wire.Quota

// DefaultDefinition is the machine of a board created by its first
// record: pending -> claimed -> running -> done | failed; claimed|running
// -> pending (release or reclaim); pending|claimed|running -> cancelled.
func DefaultDefinition() Definition {
	return Definition{
		States:  []string{"pending", "claimed", "running", "done", "failed", "cancelled"},
		Initial: "pending",
		Transitions: map[string][]string{
			"pending": {"claimed", "cancelled"},
			"claimed": {"running", "pending", "cancelled"},
			"running": {"done", "failed", "pending", "cancelled"},
		},
		Claim: ClaimRule{From: "pending", To: "claimed", TTLMs: DefaultClaimTTL.Milliseconds(), ReclaimTo: "pending",
			MaxAttempts: 5, Exhausted: "failed"},
		Terminal: []string{"done", "failed", "cancelled"},
	}
}

// IsTerminal reports whether state is terminal.
func (d *Definition) IsTerminal(state string) bool { return slices.Contains(d.Terminal, state) }

// Allows reports whether from -> to is a transition.
func (d *Definition) Allows(from, to string) bool { return slices.Contains(d.Transitions[from], to) }

// endsClaim: entering state ends a claim (the claim's from state,
// reclaim_to, or a terminal state).
func (d *Definition) endsClaim(state string) bool {
	return state == d.Claim.From || state == d.Claim.ReclaimTo || d.IsTerminal(state)
}

// normalize fills the claim rule's defaults.
func (d *Definition) normalize() {
	if d.Claim.TTLMs == 0 {
		d.Claim.TTLMs = DefaultClaimTTL.Milliseconds()
	}
	if d.Claim.MaxAttempts == 0 {
		d.Claim.MaxAttempts = 5
	}
	if d.Claim.ReclaimTo == "" {
		d.Claim.ReclaimTo = d.Claim.From
	}
	if d.Transitions == nil {
		d.Transitions = map[string][]string{}
	}
	if d.Terminal == nil {
		d.Terminal = []string{}
	}
}

// Validate checks d: every name declared, no transition out of a
// terminal state, the claim's states exist (the claim itself a
// transition), every state reachable from the initial one.
func (d *Definition) Validate() error {
	d.normalize()
	if len(d.States) == 0 || len(d.States) > MaxStates {
		return invalidf("states", "1..%d states", MaxStates)
	}
	declared := map[string]bool{}
	for i, s := range d.States {
		if err := ident.Validate("states", s); err != nil || len(s) > 64 {
			return invalidf("states", "states[%d]: a state is 1..64 characters of [A-Za-z0-9._-]", i)
		}
		if declared[s] {
			return invalidf("states", "state %q is declared twice", s)
		}
		declared[s] = true
	}
	check := func(field, s string) error {
		if !declared[s] {
			return invalidf(field, "%s: state %q is not declared in states", field, s)
		}
		return nil
	}
	if err := check("initial", d.Initial); err != nil {
		return err
	}
	for _, t := range d.Terminal {
		if err := check("terminal", t); err != nil {
			return err
		}
	}
	for from, tos := range d.Transitions {
		if err := check("transitions", from); err != nil {
			return err
		}
		if d.IsTerminal(from) && len(tos) > 0 {
			return invalidf("transitions", "transitions: %q is terminal; no transition leaves it", from)
		}
		for _, to := range tos {
			if err := check("transitions", to); err != nil {
				return err
			}
		}
	}
	c := d.Claim
	for _, f := range []struct{ field, s string }{{"claim.from", c.From}, {"claim.to", c.To}, {"claim.reclaim_to", c.ReclaimTo},
		{"claim.exhausted", c.Exhausted}} {
		if err := check(f.field, f.s); err != nil {
			return err
		}
	}
	switch {
	case c.From == c.To:
		return invalidf("claim.to", "claim.to must differ from claim.from")
	case !d.Allows(c.From, c.To):
		return invalidf("claim", "the claim %s -> %s must be one of the transitions", c.From, c.To)
	case d.IsTerminal(c.From) || d.IsTerminal(c.To) || d.IsTerminal(c.ReclaimTo):
		return invalidf("claim", "claim.from, claim.to and claim.reclaim_to must not be terminal")
	case !d.IsTerminal(c.Exhausted):
		return invalidf("claim.exhausted", "claim.exhausted must be a terminal state")
	case c.TTLMs < MinClaimTTL.Milliseconds() || c.TTLMs > MaxClaimTTL.Milliseconds():
		return invalidf("claim.ttl_ms", "claim.ttl_ms must be %d..%d", MinClaimTTL.Milliseconds(), MaxClaimTTL.Milliseconds())
	case c.MaxAttempts < 1 || c.MaxAttempts > MaxAttempts:
		return invalidf("claim.max_attempts", "claim.max_attempts must be 1..%d", MaxAttempts)
	case d.Quota.ClaimsPerMinute < 0 || d.Quota.ClaimsPerMinute > 1_000_000:
		return invalidf("quota.claims_per_minute", "quota.claims_per_minute must be 0 (no quota)..1000000")
	}
	// Reachability: the transitions, plus what a reclaim and exhaustion do.
	reached := map[string]bool{d.Initial: true}
	queue := []string{d.Initial}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		next := append([]string(nil), d.Transitions[s]...)
		if s == c.To || (s != c.From && !d.IsTerminal(s) && reached[c.To]) {
			next = append(next, c.ReclaimTo, c.Exhausted)
		}
		for _, n := range next {
			if !reached[n] {
				reached[n] = true
				queue = append(queue, n)
			}
		}
	}
	for _, s := range d.States {
		if !reached[s] {
			return invalidf("states", "state %q cannot be reached from %q", s, d.Initial)
		}
	}
	return nil
}

func (d *Definition) marshal() string {
	b, _ := json.Marshal(d)
	return string(b)
}

func parseDefinition(s string) (*Definition, error) {
	var d Definition
	if err := json.Unmarshal([]byte(s), &d); err != nil {
		return nil, err
	}
	d.normalize()
	return &d, nil
}
