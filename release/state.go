package release

// State of a release.
type State string

// States. running and paused are active.
const (
	Running    State = "running"
	Paused     State = "paused"
	Promoted   State = "promoted"
	RolledBack State = "rolled_back"
)

// Active reports whether the release still decides who gets what.
func (s State) Active() bool { return s == Running || s == Paused }

// Action is what a request or a scheduled step asks of a release.
type Action string

// Actions.
const (
	ActPause    Action = "pause"
	ActResume   Action = "resume"
	ActPromote  Action = "promote"
	ActRollback Action = "rollback"
	ActPercent  Action = "percent" // PATCH: a new percent, remaining steps cancelled
	ActStep     Action = "step"    // a scheduled percent step
	ActGuard    Action = "guard"   // PATCH: a new or removed guard, steps kept
	// ActOverrides replaces the override lists (PATCH with overrides and
	// no percent); the percent and the remaining steps stay.
	ActOverrides Action = "overrides"
)

// Transitions is the one table of legal transitions: from a state, an
// action leads to a state. An action whose target is the state the release
// is already in (pause while paused, promote while promoted, ...) is a
// no-op (200, nothing written); anything not listed is invalid_transition.
var Transitions = map[State]map[Action]State{
	Running: {
		ActPause:     Paused,
		ActResume:    Running, // no-op
		ActPromote:   Promoted,
		ActRollback:  RolledBack,
		ActPercent:   Running,
		ActStep:      Running,
		ActOverrides: Running,
		ActGuard:     Running,
	},
	Paused: {
		ActPause:     Paused, // no-op
		ActResume:    Running,
		ActPromote:   Promoted,
		ActRollback:  RolledBack,
		ActPercent:   Paused,
		ActOverrides: Paused,
		ActGuard:     Paused,
	},
	Promoted: {
		ActPromote: Promoted, // no-op
	},
	RolledBack: {
		ActRollback: RolledBack, // no-op
	},
}

// Next applies the table: the target state, whether it is a no-op, or ok
// false for an invalid transition. Percent changes and steps are never
// no-ops (they change the percent), nor are guard changes.
func Next(from State, a Action) (to State, noop, ok bool) {
	to, ok = Transitions[from][a]
	if !ok {
		return from, false, false
	}
	noop = to == from && a != ActPercent && a != ActStep && a != ActOverrides && a != ActGuard
	return to, noop, true
}
