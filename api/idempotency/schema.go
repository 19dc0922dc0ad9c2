package idempotency

import (
	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

// table is the name of the table of stored outcomes.
const table = "idempotency_keys"

// Migrations create the table of stored outcomes. The scope (hex SHA-256)
// is the primary key, so two instances racing on one key cannot both
// record it; expires_at_ms is indexed for Sweep.
func Migrations() []sqlstore.Migration {
	return []sqlstore.Migration{{Component: "idempotency", Version: 1, Name: table, Up: func(tx *gorm.DB) error {
		d := sqlstore.Dialect(tx)
		return sqlstore.CreateTable(tx, sqlstore.Table{
			Name: table,
			Columns: []string{
				"scope " + sqlstore.KeyColumnType(d, 64) + " NOT NULL",
				"body_hash VARCHAR(64) NOT NULL",
				"status INTEGER NOT NULL",
				"content_type VARCHAR(128) NOT NULL",
				"body " + sqlstore.LongText(d) + " NOT NULL",
				"created_at_ms BIGINT NOT NULL",
				"expires_at_ms BIGINT NOT NULL",
			},
			Primary: []string{"scope"},
			Indexes: map[string]string{"idempotency_keys_expires": "expires_at_ms"},
		})
	}}}
}
