package session

import (
	"gorm.io/gorm"

	"github.com/promptd/promptd/internal/sqlstore"
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
	}}}
}
