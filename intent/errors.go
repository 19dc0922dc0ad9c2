package intent

import (
	"fmt"
	"time"

	"github.com/promptd/promptd/problem"
	"github.com/promptd/promptd/wire"
)

// ErrNotFound: no intent of that id (or it ended longer ago than the
// retention).
var ErrNotFound = problem.New(problem.IntentNotFound, "intent: no such intent", "no such intent")

// InvalidError is bad input naming its field (problem's type).
type InvalidError = problem.InvalidError

func invalid(field, format string, args ...any) *InvalidError {
	return &InvalidError{Code: problem.InvalidField, Field: field, Detail: fmt.Sprintf(format, args...)}
}

// LimitError: too many live intents in one space (Name LimitLivePerSpace).
type LimitError = problem.LimitError

// LimitLivePerSpace names the limit of live intents sharing one space.
const LimitLivePerSpace = "intents_per_space"

// Conflict: the registration overlaps live intents its mode (or theirs)
// excludes. Intents are those, with their holders and scopes.
type Conflict struct {
	Intents []*Intent
}

func (e *Conflict) Error() string {
	return fmt.Sprintf("intent: overlaps %d live intents (first %s, held by %q)", len(e.Intents), e.Intents[0].ID, e.Intents[0].Holder)
}

// Problem is 409 intent_conflict with the conflicting intents.
func (e *Conflict) Problem() *problem.Problem {
	first := e.Intents[0]
	return (&problem.Problem{Code: problem.IntentConflict, Detail: fmt.Sprintf(
		"the scope overlaps %s intent %s held by %q until %s; wait for it, or narrow the scope", first.Mode, first.ID, first.Holder,
		first.ExpiresAt.UTC().Format(time.RFC3339))}).With("conflicts", Wires(e.Intents))
}

// Ended: a renew, a release or a write named an intent that was released
// or expired (by the SQL server's clock), or with another fence.
type Ended struct {
	ID    string
	State string // released, expired; active with a wrong fence
	Fence int64  // the fence given
	// Current is the intent's fence.
	Current int64
	EndedAt time.Time
}

func (e *Ended) Error() string {
	if e.State == StateActive {
		return fmt.Sprintf("intent: %s: fence %d is not its fence %d", e.ID, e.Fence, e.Current)
	}
	return fmt.Sprintf("intent: %s %s at %s", e.ID, e.State, e.EndedAt.UTC().Format(time.RFC3339Nano))
}

// Problem is 409 stale_fence naming the intent and its state.
func (e *Ended) Problem() *problem.Problem {
	d := fmt.Sprintf("intent %s was %s at %s: register a new one", e.ID, e.State, e.EndedAt.UTC().Format(time.RFC3339Nano))
	if e.State == StateActive {
		d = fmt.Sprintf("fence %d is not the fence %d of intent %s", e.Fence, e.Current, e.ID)
	}
	p := (&problem.Problem{Code: problem.StaleFence, Detail: d}).With("intent_id", e.ID).With("state", e.State).With("current_fence", e.Current)
	if !e.EndedAt.IsZero() {
		p = p.With("ended_at", problem.Timestamp(e.EndedAt))
	}
	return p
}

// OutsideScope: a write named an intent whose scope does not cover what
// it writes. Field is the request member naming it, Target what it wrote.
type OutsideScope struct {
	ID     string
	Field  string
	Target Target
}

func (e *OutsideScope) Error() string {
	return fmt.Sprintf("intent: %s does not cover %s", e.ID, e.what())
}

func (e *OutsideScope) what() string {
	switch {
	case e.Target.Agent != "" && e.Target.Env != "":
		return fmt.Sprintf("agent %s in env %s", e.Target.Agent, e.Target.Env)
	case e.Target.Agent != "":
		return "agent " + e.Target.Agent
	}
	return fmt.Sprintf("record %s of board %s", e.Target.Record, e.Target.Board)
}

// Problem is 422 outside_intent naming the intent and the field.
func (e *OutsideScope) Problem() *problem.Problem {
	p := (&problem.Problem{Code: problem.OutsideIntent, Detail: fmt.Sprintf(
		"intent %s does not cover %s; widen it (register a new intent) or write without it", e.ID, e.what())}).With("intent_id", e.ID)
	if e.Field != "" {
		p = p.With("field", e.Field)
	}
	return p
}

// Wires is in as answers show it.
func Wires(in []*Intent) []wire.Intent {
	out := make([]wire.Intent, len(in))
	for i, it := range in {
		out[i] = it.Wire()
	}
	return out
}
