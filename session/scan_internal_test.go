package session

import (
	"reflect"
	"testing"

	"gorm.io/gorm"

	"github.com/promptd/promptd/internal/harness/testenv"
)

// readSession scans by position (sessionRow.dest): the same rows read
// through GORM's name-based scan give the same values, a NULL closed_at_ms
// and a set one, on both dialects.
func TestSessionRow_positionalScan_matchesGORMsNamedScan(t *testing.T) {
	testenv.ForEachDialect(t, Migrations(), func(t *testing.T, db *gorm.DB) {
		for _, q := range []string{
			`INSERT INTO sessions (session_id, agent, env, user_id, pinned_version, state, revision, fence, turns, size_bytes, state_keys,
				metadata, idle_ttl_ms, created_at_ms, updated_at_ms, closed_at_ms) VALUES ('open', 'a', 'prod', 'u', 3, 'open', 7, 2, 5, 900, 1, '{"k":"é"}', 60000, 10, 20, NULL)`,
			`INSERT INTO sessions (session_id, agent, env, user_id, pinned_version, state, revision, fence, turns, size_bytes, state_keys,
				metadata, idle_ttl_ms, created_at_ms, updated_at_ms, closed_at_ms) VALUES ('closed', 'b', 'dev', '', 1, 'closed', 9, 0, 0, 0, 0, '{}', 0, 11, 21, 31)`,
		} {
			if err := db.Exec(q).Error; err != nil {
				t.Fatal(err)
			}
		}
		for _, id := range []string{"open", "closed"} {
			got, err := readSession(db, id)
			if err != nil {
				t.Fatal(err)
			}
			var want []sessionRow
			if err := db.Raw(`SELECT `+sessionCols+` FROM sessions WHERE session_id = ?`, id).Scan(&want).Error; err != nil || len(want) != 1 {
				t.Fatalf("GORM read: %v %v", want, err)
			}
			if !reflect.DeepEqual(*got, want[0]) {
				t.Errorf("%s: positional %+v\nnamed      %+v", id, *got, want[0])
			}
			if (id == "closed") != (got.ClosedAtMs != nil) || got.Revision == 0 {
				t.Errorf("%s: %+v", id, *got)
			}
		}
		if _, err := readSession(db, "missing"); err != ErrNotFound {
			t.Errorf("missing: %v, want ErrNotFound", err)
		}
	})
}
