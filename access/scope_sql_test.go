package access

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/sqlstore"
)

// The SQL filter of a scope list (Scopes.Names(kind).Cond) selects exactly
// the names Allows allows, on random names and patterns, on SQLite and on
// MariaDB (binary collation): a scoped list filtered in SQL shows what the
// check after it would keep.
func TestScopes_sqlFilter_agreesWithAllows_onRandomNames(t *testing.T) {
	testenv.ForEachDialect(t, nil, func(t *testing.T, db *gorm.DB) {
		d := sqlstore.Dialect(db)
		if err := db.Exec(`CREATE TABLE scope_names (name ` + sqlstore.IDColumnType(d) + ` NOT NULL PRIMARY KEY)` +
			sqlstore.TableOptions(d)).Error; err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(7, uint64(len(d))))
		// A small alphabet makes prefixes share bytes often; its edges are
		// the bytes next to a prefix's raised bound ('-' -> '.', 'z' ->
		// '{', '9' -> ':') and letters in both cases.
		const alphabet = "-.09AZ_az"
		word := func(n int) string {
			var b strings.Builder
			b.WriteByte("0aZ"[rng.IntN(3)])
			for range n {
				b.WriteByte(alphabet[rng.IntN(len(alphabet))])
			}
			return b.String()
		}
		names := map[string]bool{}
		for len(names) < 400 {
			names[word(rng.IntN(6))] = true
		}
		var all []string
		for n := range names {
			all = append(all, n)
		}
		slices.Sort(all)
		for chunk := range slices.Chunk(all, 100) {
			q := `INSERT INTO scope_names (name) VALUES (?)` + strings.Repeat(`, (?)`, len(chunk)-1)
			args := make([]any, len(chunk))
			for i, n := range chunk {
				args[i] = n
			}
			if err := db.Exec(q, args...).Error; err != nil {
				t.Fatal(err)
			}
		}
		for round := range 300 {
			var patterns []string
			if round > 0 { // round 0: [] allows none
				for range 1 + rng.IntN(4) {
					p := all[rng.IntN(len(all))]
					switch rng.IntN(4) {
					case 0: // an exact name
					case 1:
						p = word(rng.IntN(3)) // most likely no such name
					default: // a prefix of a name
						p = p[:1+rng.IntN(len(p))] + "*"
					}
					patterns = append(patterns, p)
				}
				if round%50 == 1 {
					patterns = append(patterns, "*")
				}
			} else {
				patterns = []string{}
			}
			s := &Scopes{Agents: patterns}
			if err := s.Validate(); err != nil {
				t.Fatalf("patterns %q: %v", patterns, err)
			}
			var want []string
			for _, n := range all {
				if s.Allows(KindAgent, n) {
					want = append(want, n)
				}
			}
			q := `SELECT name FROM scope_names`
			cond, args := s.Names(KindAgent).Cond("name")
			if cond != "" {
				q += ` WHERE ` + cond
			}
			var got []string
			if err := db.Raw(q+` ORDER BY name`, args...).Scan(&got).Error; err != nil {
				t.Fatalf("patterns %q: %v", patterns, err)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("patterns %q: SQL selected %d names %q, Allows %d %q", patterns, len(got), got, len(want), want)
			}
		}
	})
}
