package intent

import (
	"fmt"
	"slices"
	"strings"

	"github.com/promptd/promptd/ident"
	"github.com/promptd/promptd/sqlstore"
)

// MaxScopeEntries bounds the names, ids and prefixes of one scope.
const MaxScopeEntries = 1000

// Scope is what an intent covers. Agents are names or prefixes ending in
// '*' ("team-a-*"; "*" is every agent); Envs narrow them (empty: every
// env; envs alone mean every agent in them). Boards are whole boards;
// Records are ids and id prefixes of one board each.
type Scope struct {
	Agents  []string      `json:"agents,omitempty"`
	Envs    []string      `json:"envs,omitempty"`
	Boards  []string      `json:"boards,omitempty"`
	Records []RecordScope `json:"records,omitempty"`
}

// RecordScope is records of one board: ids, and prefixes of ids (a prefix
// covers every id it starts, generated ones included).
type RecordScope struct {
	Board    string   `json:"board"`
	IDs      []string `json:"ids,omitempty"`
	Prefixes []string `json:"prefixes,omitempty"`
}

// Empty reports whether s covers nothing.
func (s Scope) Empty() bool {
	return len(s.Agents) == 0 && len(s.Envs) == 0 && len(s.Boards) == 0 && len(s.Records) == 0
}

// Normalize checks s and returns it in its canonical form: every list
// sorted and without duplicates, the record scopes of one board merged
// (and dropped where the board is whole). field prefixes the names of
// errors ("scope").
func (s Scope) Normalize(field string) (Scope, error) {
	var out Scope
	n := 0
	count := func(k int) error {
		if n += k; n > MaxScopeEntries {
			return invalid(field, "a scope holds at most %d agents, envs, boards, ids and prefixes", MaxScopeEntries)
		}
		return nil
	}
	for i, a := range s.Agents {
		if err := checkPattern(fmt.Sprintf("%s.agents[%d]", field, i), a); err != nil {
			return out, err
		}
	}
	for i, e := range s.Envs {
		if err := ident.Check(fmt.Sprintf("%s.envs[%d]", field, i), e); err != nil {
			return out, err
		}
	}
	for i, b := range s.Boards {
		if err := ident.Check(fmt.Sprintf("%s.boards[%d]", field, i), b); err != nil {
			return out, err
		}
	}
	out.Agents, out.Envs, out.Boards = uniq(s.Agents), uniq(s.Envs), uniq(s.Boards)
	if len(out.Envs) > 0 && len(out.Agents) == 0 {
		out.Agents = []string{"*"}
	}
	if slices.Contains(out.Agents, "*") {
		out.Agents = []string{"*"}
	}
	if err := count(len(out.Agents) + len(out.Envs) + len(out.Boards)); err != nil {
		return out, err
	}
	byBoard := map[string]*RecordScope{}
	for i, r := range s.Records {
		f := fmt.Sprintf("%s.records[%d]", field, i)
		if err := ident.Check(f+".board", r.Board); err != nil {
			return out, err
		}
		if len(r.IDs) == 0 && len(r.Prefixes) == 0 {
			return out, invalid(f, "a record scope names ids or prefixes (a whole board goes in boards)")
		}
		for j, id := range r.IDs {
			if err := ident.Check(fmt.Sprintf("%s.ids[%d]", f, j), id); err != nil {
				return out, err
			}
		}
		for j, p := range r.Prefixes {
			if p == "" || len(p) > ident.MaxID {
				return out, invalid(fmt.Sprintf("%s.prefixes[%d]", f, j), "a prefix is 1..%d bytes", ident.MaxID)
			}
		}
		if slices.Contains(out.Boards, r.Board) {
			continue
		}
		m := byBoard[r.Board]
		if m == nil {
			m = &RecordScope{Board: r.Board}
			byBoard[r.Board] = m
		}
		m.IDs = append(m.IDs, r.IDs...)
		m.Prefixes = append(m.Prefixes, r.Prefixes...)
	}
	for _, m := range byBoard {
		m.IDs, m.Prefixes = uniq(m.IDs), uniq(m.Prefixes)
		if err := count(len(m.IDs) + len(m.Prefixes)); err != nil {
			return out, err
		}
		out.Records = append(out.Records, *m)
	}
	slices.SortFunc(out.Records, func(a, b RecordScope) int { return strings.Compare(a.Board, b.Board) })
	return out, nil
}

// checkPattern: a name, or a prefix of names ending in one '*'.
func checkPattern(field, p string) error {
	if p == "*" {
		return nil
	}
	if prefix, ok := strings.CutSuffix(p, "*"); ok {
		if prefix == "" || strings.Contains(prefix, "*") {
			return invalid(field, "a pattern is a name or a prefix ending in one '*'")
		}
		return ident.Check(field, prefix)
	}
	return ident.Check(field, p)
}

func uniq(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	out := slices.Clone(in)
	slices.Sort(out)
	return slices.Compact(out)
}

// spaces are the lock rows of s: "agents" for any agent scope, and
// "board:<name>" for each board it names (whole or some records), sorted.
func (s Scope) spaces() []string {
	var out []string
	if len(s.Agents) > 0 {
		out = append(out, "agents")
	}
	for _, b := range s.Boards {
		out = append(out, "board:"+b)
	}
	for _, r := range s.Records {
		out = append(out, "board:"+r.Board)
	}
	return uniq(out)
}

// Overlaps reports whether a and b share anything: an agent both cover
// in an env both cover, a board one covers whole that the other names, or
// a record both cover.
func Overlaps(a, b Scope) bool {
	if patternsOverlap(a.Agents, b.Agents) && (len(a.Envs) == 0 || len(b.Envs) == 0 || intersect(a.Envs, b.Envs)) {
		return true
	}
	for _, x := range a.Boards {
		if slices.Contains(b.Boards, x) || b.records(x) != nil {
			return true
		}
	}
	for _, x := range b.Boards {
		if a.records(x) != nil {
			return true
		}
	}
	for _, ra := range a.Records {
		if rb := b.records(ra.Board); rb != nil && recordsOverlap(ra, *rb) {
			return true
		}
	}
	return false
}

func (s Scope) records(board string) *RecordScope {
	for i := range s.Records {
		if s.Records[i].Board == board {
			return &s.Records[i]
		}
	}
	return nil
}

func intersect(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// patternsOverlap: some name matches a pattern of each list.
func patternsOverlap(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if patternOverlap(x, y) {
				return true
			}
		}
	}
	return false
}

func patternOverlap(x, y string) bool {
	px, xp := strings.CutSuffix(x, "*")
	py, yp := strings.CutSuffix(y, "*")
	switch {
	case xp && yp:
		return strings.HasPrefix(px, py) || strings.HasPrefix(py, px)
	case xp:
		return strings.HasPrefix(y, px)
	case yp:
		return strings.HasPrefix(x, py)
	}
	return x == y
}

func recordsOverlap(a, b RecordScope) bool {
	for _, id := range a.IDs {
		if b.coversID(id) {
			return true
		}
	}
	for _, id := range b.IDs {
		if a.coversID(id) {
			return true
		}
	}
	for _, p := range a.Prefixes {
		for _, q := range b.Prefixes {
			if strings.HasPrefix(p, q) || strings.HasPrefix(q, p) {
				return true
			}
		}
	}
	return false
}

func (r RecordScope) coversID(id string) bool {
	if slices.Contains(r.IDs, id) {
		return true
	}
	for _, p := range r.Prefixes {
		if strings.HasPrefix(id, p) {
			return true
		}
	}
	return false
}

// Target is one thing a write touches: an agent (in an env, or "" for
// what belongs to no env, as a version), or a record of a board.
type Target struct {
	Agent, Env    string
	Board, Record string
}

// Covers reports whether t is inside s: an agent a pattern of s matches,
// in an env of s (any env when s names none; a target of no env is inside
// any agent scope that matches it); a record of a whole board of s, or one
// its ids or prefixes of that board cover.
func (s Scope) Covers(t Target) bool {
	if t.Agent != "" {
		return sqlstore.Names(s.Agents).Contains(t.Agent) && len(s.Agents) > 0 &&
			(t.Env == "" || len(s.Envs) == 0 || slices.Contains(s.Envs, t.Env))
	}
	if slices.Contains(s.Boards, t.Board) {
		return true
	}
	r := s.records(t.Board)
	return r != nil && r.coversID(t.Record)
}

// Within reports whether every agent, env and board s names is inside the
// names a scoped token may reach (nil Names: every name).
func (s Scope) Within(agents, envs, boards sqlstore.Names) bool {
	for _, a := range s.Agents {
		if !patternWithin(a, agents) {
			return false
		}
	}
	if len(s.Agents) > 0 && len(s.Envs) == 0 && !envs.All() {
		return false // every env
	}
	for _, e := range s.Envs {
		if !envs.Contains(e) {
			return false
		}
	}
	for _, b := range s.Boards {
		if !boards.Contains(b) {
			return false
		}
	}
	for _, r := range s.Records {
		if !boards.Contains(r.Board) {
			return false
		}
	}
	return true
}

// patternWithin: every name p matches is in n.
func patternWithin(p string, n sqlstore.Names) bool {
	if n.All() {
		return true
	}
	prefix, isPrefix := strings.CutSuffix(p, "*")
	if !isPrefix {
		return n.Contains(p)
	}
	for _, q := range n {
		if qp, ok := strings.CutSuffix(q, "*"); ok && strings.HasPrefix(prefix, qp) {
			return true
		}
	}
	return false
}
