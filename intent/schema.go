package intent

import (
	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

// Migrations create intents, the spaces registrations lock and the index
// of live intents by space.
func Migrations() []sqlstore.Migration {
	return []sqlstore.Migration{{Component: "intent", Version: 1, Name: "intents, intent_spaces, intent_keys", Up: func(tx *gorm.DB) error {
		d := sqlstore.Dialect(tx)
		id := sqlstore.IDColumnType(d)
		opaque := sqlstore.KeyColumnType(d, 256)
		long := sqlstore.LongText(d)
		for _, t := range []sqlstore.Table{{
			Name: "intents",
			Columns: []string{
				"id " + id + " NOT NULL",
				"holder " + opaque + " NOT NULL",
				"mode " + sqlstore.KeyColumnType(d, 16) + " NOT NULL",
				"scope " + long + " NOT NULL",
				"description " + long + " NOT NULL",
				"fence BIGINT NOT NULL",
				"state " + sqlstore.KeyColumnType(d, 16) + " NOT NULL",
				"ttl_ms BIGINT NOT NULL",
				"expires_at_ms BIGINT NOT NULL",
				"ended_at_ms BIGINT NULL",
				"created_by " + opaque + " NOT NULL",
				"created_at_ms BIGINT NOT NULL",
			},
			Primary: []string{"id"},
			Indexes: map[string]string{
				"intents_live":    "state, expires_at_ms",
				"intents_holder":  "holder, state",
				"intents_created": "created_at_ms",
			},
		}, {
			Name:    "intent_spaces",
			Columns: []string{"space " + opaque + " NOT NULL", "seq BIGINT NOT NULL"},
			Primary: []string{"space"},
		}, {
			Name:    "intent_keys",
			Columns: []string{"space " + opaque + " NOT NULL", "intent_id " + id + " NOT NULL"},
			Primary: []string{"space", "intent_id"},
			Indexes: map[string]string{"intent_keys_intent": "intent_id"},
		}} {
			if err := sqlstore.CreateTable(tx, t); err != nil {
				return err
			}
		}
		return nil
	}}}
}
