package session

import (
	"encoding/json"

	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

// Per-session limits, checked in the conditional UPDATE of the session
// row that every append and state PUT already makes (touchQuery): the row
// keeps counters (turns, size_bytes, state_keys) and the condition says
// "counter + growth <= limit", so two concurrent writers cannot both pass
// a limit, and a refused write changes nothing. A write over a limit is a
// *problem.LimitError naming it.
const (
	DefaultMaxSessionTurns = 10000
	DefaultMaxSessionBytes = 32 << 20
	DefaultMaxStateKeys    = 1000
	// DefaultPageBytes bounds the turns of one Get page.
	DefaultPageBytes = 4 << 20
)

// Names of the limits, as LimitError.Name and the API's "field".
const (
	LimitTurns     = "session_turns"
	LimitBytes     = "session_bytes"
	LimitStateKeys = "session_state_keys"
)

// limits are the configured per-session limits (Options).
type limits struct{ turns, bytes, keys int64 }

func (s *Service) limits() limits {
	return limits{turns: s.o.MaxSessionTurns, bytes: s.o.MaxSessionBytes, keys: s.o.MaxStateKeys}
}

// growth is what a write adds to the session row's counters. turns is set
// by the caller's SET (appendTouch needs LAST_INSERT_ID around it); bytes
// and keys are added by touchQuery. Only growth is checked against a
// limit: a write that shrinks the session always passes.
type growth struct {
	turns, bytes, keys int64
	lim                limits
}

type check struct {
	col, name    string
	delta, limit int64
}

func (g growth) checks() []check {
	var out []check
	for _, c := range []check{{"turns", LimitTurns, g.turns, g.lim.turns}, {"size_bytes", LimitBytes, g.bytes, g.lim.bytes},
		{"state_keys", LimitStateKeys, g.keys, g.lim.keys}} {
		if c.delta > 0 && c.limit > 0 {
			out = append(out, c)
		}
	}
	return out
}

// over is the limit row would pass with g, or nil.
func (g growth) over(row *sessionRow) error {
	have := map[string]int64{"turns": row.Turns, "size_bytes": row.SizeBytes, "state_keys": row.StateKeys}
	for _, c := range g.checks() {
		if have[c.col]+c.delta > c.limit {
			return limitError(c.name, c.limit)
		}
	}
	return nil
}

// turnBytes is a turn's size as the session_bytes limit counts it: what is
// stored of it (turnSize in SQL).
func turnBytes(t TurnInput) int64 {
	n := len(t.Content) + len(t.Name) + len(t.ToolCallID)
	for _, r := range []json.RawMessage{t.ToolCalls, t.Metadata} {
		if s, ok := nullJSON(r).(string); ok {
			n += len(s)
		}
	}
	return int64(n)
}

// stateBytes is an entry's size as the session_bytes limit counts it.
func stateBytes(key string, value []byte) int64 { return int64(len(key) + len(value)) }

// storedValueBytes is the size of the value a state entry has at revision
// rev; found is false when the entry is not at that revision.
func storedValueBytes(tx *gorm.DB, id, key string, rev int64) (n int64, found bool, err error) {
	var sizes []int64
	err = tx.Raw(`SELECT `+octets(sqlstore.Dialect(tx), "value")+` FROM session_state WHERE session_id = ? AND state_key = ? AND revision = ?`,
		id, key, rev).Scan(&sizes).Error
	if err != nil || len(sizes) == 0 {
		return 0, false, err
	}
	return sizes[0], true, nil
}
