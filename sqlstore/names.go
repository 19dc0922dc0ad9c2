package sqlstore

import "strings"

// Names is a set of names given by patterns, the SQL side of a token's
// scopes: each pattern is a name, or a prefix ending in one '*'
// ("team-a-*"; a lone "*" is every name). A nil Names is every name, an
// empty one none. Lists put it in their WHERE, so that a page is filtered
// before its LIMIT, not after.
type Names []string

// All reports whether n holds every name (nil, or a lone "*" in it).
func (n Names) All() bool {
	if n == nil {
		return true
	}
	for _, p := range n {
		if p == "*" {
			return true
		}
	}
	return false
}

// None reports whether n holds no name at all (an empty, non-nil list):
// a list limited to it is empty without a query.
func (n Names) None() bool { return n != nil && len(n) == 0 }

// Contains reports whether name is in n: the Go form of Cond, for rows
// already in memory.
func (n Names) Contains(name string) bool {
	if n == nil {
		return true
	}
	for _, p := range n {
		if prefix, ok := strings.CutSuffix(p, "*"); ok && strings.HasPrefix(name, prefix) || p == name {
			return true
		}
	}
	return false
}

// Cond is a SQL condition on col that holds exactly for the rows whose
// col is in n, and the values of its placeholders: "" when n is every
// name, "1 = 0" when none. A name is col = ?; a prefix is the byte range
// col >= prefix AND col < the prefix with its last byte raised, which an
// index on col serves. It relies on col comparing byte for byte (the
// identifier columns do: utf8mb4_bin on MySQL/MariaDB, BINARY on SQLite)
// and on prefixes of ASCII names (the identifier rule), so that the raised
// bound is ASCII too and orders the same in both.
func (n Names) Cond(col string) (string, []any) {
	if n.All() {
		return "", nil
	}
	if len(n) == 0 {
		return "1 = 0", nil
	}
	var b strings.Builder
	args := make([]any, 0, 2*len(n))
	b.WriteString("(")
	for i, p := range n {
		if i > 0 {
			b.WriteString(" OR ")
		}
		prefix, star := strings.CutSuffix(p, "*")
		if !star {
			b.WriteString(col + " = ?")
			args = append(args, p)
			continue
		}
		if upper, ok := prefixUpper(prefix); ok {
			b.WriteString("(" + col + " >= ? AND " + col + " < ?)")
			args = append(args, prefix, upper)
		} else {
			// Not an ASCII prefix (no identifier is): compare the
			// first bytes themselves, without an index.
			b.WriteString("SUBSTR(" + col + ", 1, ?) = ?")
			args = append(args, len([]rune(prefix)), prefix)
		}
	}
	b.WriteString(")")
	return b.String(), args
}

// prefixUpper is the least string above every string that starts with
// prefix, for a non-empty printable-ASCII prefix: the prefix with its last
// byte raised by one ('-' becomes '.'). ok is false for any other prefix.
func prefixUpper(prefix string) (string, bool) {
	if prefix == "" {
		return "", false
	}
	for i := 0; i < len(prefix); i++ {
		if prefix[i] < 0x21 || prefix[i] > 0x7d {
			return "", false
		}
	}
	last := len(prefix) - 1
	return prefix[:last] + string(prefix[last]+1), true
}

// Column is a column of names and the Names it may hold.
type Column struct {
	Col   string
	Names Names
}

// Named is the condition of a scoped reader's view over rows that name
// resources in several columns, where "" names nothing: each column is ""
// or in its Names, and at least one is not "" (a row that names nothing is
// not in any scope). none reports that no row can pass, so that the list
// is empty without a query.
func Named(cols ...Column) (cond string, args []any, none bool) {
	parts := make([]string, 0, len(cols)+1)
	var some []string
	none = true
	for _, c := range cols {
		some = append(some, c.Col+" <> ''")
		if !c.Names.None() {
			none = false
		}
		cc, a := c.Names.Cond(c.Col)
		if cc == "" {
			continue
		}
		parts = append(parts, "("+c.Col+" = '' OR "+cc+")")
		args = append(args, a...)
	}
	if len(cols) == 0 {
		return "1 = 0", nil, true
	}
	parts = append(parts, "("+strings.Join(some, " OR ")+")")
	return strings.Join(parts, " AND "), args, none
}
