package access

import (
	"fmt"
	"slices"
	"strings"

	"github.com/promptd/promptd/ident"
	"github.com/promptd/promptd/sqlstore"
)

// Resource kinds a scope limits.
const (
	KindAgent = "agent"
	KindEnv   = "env"
	KindBoard = "board"
)

// Scopes limit a token to some agents, envs and boards. Each list holds
// names or prefixes ending in one '*' ("team-a-*"); a nil list means every
// name, an empty one none. The zero Scopes is unscoped.
type Scopes struct {
	Agents []string `json:"agents"`
	Envs   []string `json:"envs"`
	Boards []string `json:"boards"`
}

// MaxPatterns is the most patterns one list may hold.
const MaxPatterns = 100

// Unscoped reports whether s limits nothing.
func (s *Scopes) Unscoped() bool {
	return s == nil || (s.Agents == nil && s.Envs == nil && s.Boards == nil)
}

// list is s's list for kind.
func (s *Scopes) list(kind string) []string {
	if s == nil {
		return nil
	}
	switch kind {
	case KindAgent:
		return s.Agents
	case KindEnv:
		return s.Envs
	default:
		return s.Boards
	}
}

// Allows reports whether name of kind is within s.
func (s *Scopes) Allows(kind, name string) bool {
	if s == nil {
		return true
	}
	l := s.list(kind)
	if l == nil {
		return true
	}
	for _, p := range l {
		if matches(p, name) {
			return true
		}
	}
	return false
}

// Names is s's list for kind as the SQL filter of a list (nil: every
// name): a list puts its condition in its query, so that a scoped page is
// filtered before its LIMIT; it holds for exactly the names Allows allows.
func (s *Scopes) Names(kind string) sqlstore.Names { return sqlstore.Names(s.list(kind)) }

func matches(pattern, name string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(name, prefix)
	}
	return pattern == name
}

// Within reports whether every name s allows is also allowed by parent
// (so a token with s is no wider than one with parent), and if not, the
// kind that is wider.
func (s *Scopes) Within(parent *Scopes) (bool, string) {
	for _, kind := range []string{KindAgent, KindEnv, KindBoard} {
		if !listWithin(s.list(kind), parent.list(kind)) {
			return false, kind
		}
	}
	return true, ""
}

// listWithin: child's names are a subset of parent's. A pattern is covered
// when some parent pattern matches every name it matches.
func listWithin(child, parent []string) bool {
	if parent == nil {
		return true
	}
	if child == nil {
		return false
	}
	for _, c := range child {
		if !slices.ContainsFunc(parent, func(p string) bool { return covers(p, c) }) {
			return false
		}
	}
	return true
}

// covers: every name c matches, p matches too.
func covers(p, c string) bool {
	pp, pStar := strings.CutSuffix(p, "*")
	cp, cStar := strings.CutSuffix(c, "*")
	switch {
	case !pStar:
		return !cStar && p == c
	default:
		return strings.HasPrefix(cp, pp)
	}
}

// Validate checks every pattern: an identifier, or a prefix of one ending
// in a single '*' (a lone "*" allows every name).
func (s *Scopes) Validate() error {
	if s == nil {
		return nil
	}
	for _, f := range []struct {
		field string
		list  []string
	}{{"scopes.agents", s.Agents}, {"scopes.envs", s.Envs}, {"scopes.boards", s.Boards}} {
		if len(f.list) > MaxPatterns {
			return invalid(f.field, "at most %d patterns", MaxPatterns)
		}
		for i, p := range f.list {
			field := fmt.Sprintf("%s[%d]", f.field, i)
			prefix, star := strings.CutSuffix(p, "*")
			if star && prefix == "" {
				continue
			}
			if strings.Contains(prefix, "*") {
				return invalid(field, "a pattern is a name, or a prefix ending in one '*'")
			}
			if err := ident.Validate(field, prefix); err != nil {
				return err
			}
		}
	}
	return nil
}

// Intersect is the scopes that allow a name exactly when both s and o
// allow it (nil: unscoped). Of two patterns, the names both match are
// those of the narrower one, when one covers the other, and none
// otherwise, so the intersection of two lists is again a list of
// patterns.
func (s *Scopes) Intersect(o *Scopes) *Scopes {
	if s.Unscoped() {
		return o
	}
	if o.Unscoped() {
		return s
	}
	return &Scopes{Agents: intersectLists(s.Agents, o.Agents), Envs: intersectLists(s.Envs, o.Envs),
		Boards: intersectLists(s.Boards, o.Boards)}
}

func intersectLists(a, b []string) []string {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	out := []string{} // empty, not nil: no name
	for _, p := range a {
		for _, q := range b {
			m := ""
			switch {
			case covers(p, q):
				m = q
			case covers(q, p):
				m = p
			default:
				continue
			}
			if !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
	}
	return out
}
