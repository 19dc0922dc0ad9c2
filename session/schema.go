package session

import (
	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

// Migrations create sessions, their turns and their state entries.
func Migrations() []sqlstore.Migration {
	return []sqlstore.Migration{{Component: "session", Version: 1, Name: "sessions, session_turns, session_state", Up: func(tx *gorm.DB) error {
		d := sqlstore.Dialect(tx)
		id := sqlstore.IDColumnType(d)
		opaque := sqlstore.KeyColumnType(d, 256)
		long := sqlstore.LongText(d)
		for _, t := range []sqlstore.Table{{
			Name: "sessions",
			Columns: []string{
				"session_id " + id + " NOT NULL",
				"agent " + id + " NOT NULL",
				"env " + id + " NOT NULL",
				"user_id " + opaque + " NOT NULL",
				"pinned_version BIGINT NOT NULL",
				"state VARCHAR(16) NOT NULL",
				"revision BIGINT NOT NULL",
				"fence BIGINT NOT NULL",
				"turns BIGINT NOT NULL",
				"metadata " + long + " NOT NULL",
				"idle_ttl_ms BIGINT NOT NULL",
				"created_at_ms BIGINT NOT NULL",
				"updated_at_ms BIGINT NOT NULL",
				"closed_at_ms BIGINT NULL",
			},
			Primary: []string{"session_id"},
			Indexes: map[string]string{"sessions_idle": "state, updated_at_ms", "sessions_closed": "state, closed_at_ms"},
		}, {
			Name: "session_turns",
			Columns: []string{
				"session_id " + id + " NOT NULL",
				"seq BIGINT NOT NULL",
				"role VARCHAR(16) NOT NULL",
				"content " + long + " NOT NULL",
				"name VARCHAR(256) NOT NULL",
				"tool_call_id VARCHAR(256) NOT NULL",
				"tool_calls " + long + " NULL",
				"metadata " + long + " NULL",
				"created_at_ms BIGINT NOT NULL",
			},
			Primary: []string{"session_id", "seq"},
		}, {
			Name: "session_state",
			Columns: []string{
				"session_id " + id + " NOT NULL",
				"state_key " + id + " NOT NULL",
				"value " + long + " NOT NULL",
				"revision BIGINT NOT NULL",
				"updated_at_ms BIGINT NOT NULL",
			},
			Primary: []string{"session_id", "state_key"},
		}} {
			if err := sqlstore.CreateTable(tx, t); err != nil {
				return err
			}
		}
		return nil
	}}, {Component: "session", Version: 2, Name: "sessions.size_bytes and sessions.state_keys, the counters the limits are checked on", Up: addCounters},
		{Component: "session", Version: 3, Name: "sessions_created and sessions_agent_created, the orders of GET /v1/sessions", Up: addListIndexes},
		{Component: "session", Version: 4, Name: "sessions_agent_newest and sessions_state_newest, GET /v1/sessions?agent= and ?state= without a sort",
			Up: addNewestIndexes}}
}

// addNewestIndexes indexes an agent's sessions and a state's newest first:
// with only sessions_agent_created (agent, env, ...) a filter on the agent
// alone sorted all of the agent's sessions for each page, and SQLite
// answered ?state= from sessions_closed (state, closed_at_ms) with a sort
// of every open session. Each is created only when missing.
func addNewestIndexes(tx *gorm.DB) error {
	for name, cols := range map[string]string{
		"sessions_agent_newest": "agent, created_at_ms, session_id",
		"sessions_state_newest": "state, created_at_ms, session_id",
	} {
		if tx.Migrator().HasIndex("sessions", name) {
			continue
		}
		if err := tx.Exec(`CREATE INDEX ` + name + ` ON sessions (` + cols + `)`).Error; err != nil {
			return err
		}
	}
	return nil
}

// addListIndexes adds the indexes List pages along: newest first overall,
// and within an agent (and env). Each is created only when missing, so on
// MySQL a migration that failed after the first can run again.
func addListIndexes(tx *gorm.DB) error {
	for name, cols := range map[string]string{
		"sessions_created":       "created_at_ms, session_id",
		"sessions_agent_created": "agent, env, created_at_ms, session_id",
	} {
		if tx.Migrator().HasIndex("sessions", name) {
			continue
		}
		if err := tx.Exec(`CREATE INDEX ` + name + ` ON sessions (` + cols + `)`).Error; err != nil {
			return err
		}
	}
	return nil
}

// addCounters adds the counters the per-session limits are checked on
// (limits.go) and fills them from the turns and state entries already
// stored. The columns are added only when missing, so on MySQL (which
// commits each ALTER at once) a migration that failed after them can run
// again.
func addCounters(tx *gorm.DB) error {
	d := sqlstore.Dialect(tx)
	for _, col := range []string{"size_bytes", "state_keys"} {
		if tx.Migrator().HasColumn("sessions", col) {
			continue
		}
		if err := tx.Exec(`ALTER TABLE sessions ADD COLUMN ` + col + ` BIGINT NOT NULL DEFAULT 0`).Error; err != nil {
			return err
		}
	}
	return tx.Exec(`UPDATE sessions SET
		size_bytes = COALESCE((SELECT SUM(` + turnSizeSQL(d, "t.") + `) FROM session_turns t WHERE t.session_id = sessions.session_id), 0)
			+ COALESCE((SELECT SUM(` + octets(d, "e.state_key") + ` + ` + octets(d, "e.value") + `) FROM session_state e
				WHERE e.session_id = sessions.session_id), 0),
		state_keys = (SELECT COUNT(*) FROM session_state e WHERE e.session_id = sessions.session_id)`).Error
}

// octets is the SQL length in bytes of a text column (SQLite's LENGTH
// counts characters of TEXT), 0 for NULL.
func octets(dialect, col string) string {
	if dialect == sqlstore.MySQL {
		return "COALESCE(LENGTH(" + col + "), 0)"
	}
	return "COALESCE(LENGTH(CAST(" + col + " AS BLOB)), 0)"
}

// turnSizeSQL is the SQL size of a stored turn, as turnBytes counts it; p
// qualifies the columns ("t." or "").
func turnSizeSQL(dialect, p string) string {
	return octets(dialect, p+"content") + " + " + octets(dialect, p+"name") + " + " + octets(dialect, p+"tool_call_id") + " + " +
		octets(dialect, p+"tool_calls") + " + " + octets(dialect, p+"metadata")
}
