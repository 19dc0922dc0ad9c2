package sqlstore_test

import (
	"fmt"
	"slices"
	"testing"

	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

// Names.Cond and Named select, in SQL, exactly the rows Contains and the
// "" names nothing rule keep, on both dialects: exact names, byte ranges
// for prefixes (case-sensitive, with the bytes just past a range), the
// SUBSTR form of a non-ASCII prefix, every name, none.
func TestNames_sqlCondition_selectsWhatContainsKeeps(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db *gorm.DB) {
		d := sqlstore.Dialect(db)
		if err := db.Exec(`CREATE TABLE named (id INTEGER NOT NULL PRIMARY KEY, agent ` + sqlstore.IDColumnType(d) +
			` NOT NULL, env ` + sqlstore.IDColumnType(d) + ` NOT NULL)` + sqlstore.TableOptions(d)).Error; err != nil {
			t.Fatal(err)
		}
		rows := [][2]string{{"team-a-1", "prod"}, {"team-a", "prod"}, {"team-a.", "prod"}, {"team-A-1", "prod"},
			{"team-a-2", "staging"}, {"", "prod"}, {"", "staging"}, {"", ""}, {"team-b", ""}, {"é-bot", "prod"}, {"éx", ""}}
		for i, r := range rows {
			if err := db.Exec(`INSERT INTO named (id, agent, env) VALUES (?, ?, ?)`, i, r[0], r[1]).Error; err != nil {
				t.Fatal(err)
			}
		}
		sel := func(cond string, args []any) []int {
			t.Helper()
			q := `SELECT id FROM named`
			if cond != "" {
				q += ` WHERE ` + cond
			}
			var ids []int
			if err := db.Raw(q+` ORDER BY id`, args...).Scan(&ids).Error; err != nil {
				t.Fatalf("%s: %v", cond, err)
			}
			return ids
		}
		for _, n := range []sqlstore.Names{nil, {}, {"*"}, {"team-a-*"}, {"team-a"}, {"team-a*", "team-b"}, {"é-*"}, {"te*", "x"}} {
			var want []int
			for i, r := range rows {
				if n.Contains(r[0]) {
					want = append(want, i)
				}
			}
			if got := sel(n.Cond("agent")); !slices.Equal(got, want) {
				t.Errorf("agents %q: SQL selected %v, Contains %v", n, got, want)
			}
			envs := sqlstore.Names{"prod"}
			want = nil
			for i, r := range rows {
				if (r[0] != "" || r[1] != "") && (r[0] == "" || n.Contains(r[0])) && (r[1] == "" || envs.Contains(r[1])) {
					want = append(want, i)
				}
			}
			cond, args, none := sqlstore.Named(sqlstore.Column{Col: "agent", Names: n}, sqlstore.Column{Col: "env", Names: envs})
			if got := sel(cond, args); !slices.Equal(got, want) {
				t.Errorf("Named(agents %q, envs %q): SQL selected %v, want %v", n, envs, got, want)
			}
			if none {
				t.Errorf("Named(agents %q, envs %q) says none", n, envs)
			}
		}
		if _, _, none := sqlstore.Named(sqlstore.Column{Col: "agent", Names: sqlstore.Names{}},
			sqlstore.Column{Col: "env", Names: sqlstore.Names{}}); !none {
			t.Error("Named of two empty lists is not none")
		}
		if got := fmt.Sprint(sqlstore.Names{}.None(), sqlstore.Names(nil).None(), sqlstore.Names{"*"}.All()); got != "true false true" {
			t.Errorf("None/All = %s", got)
		}
	})
}
