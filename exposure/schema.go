package exposure

import (
	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

// Migrations create the exposure counts and the outcomes (see the package
// comment for the outcome table's columns).
func Migrations() []sqlstore.Migration {
	return []sqlstore.Migration{{Component: "exposure", Version: 1, Name: "exposures per minute, release outcomes", Up: func(tx *gorm.DB) error {
		d := sqlstore.Dialect(tx)
		id := sqlstore.IDColumnType(d)
		if err := sqlstore.CreateTable(tx, sqlstore.Table{
			Name: "exposures",
			Columns: []string{
				"agent " + id + " NOT NULL",
				"env " + id + " NOT NULL",
				"minute_ms BIGINT NOT NULL",
				"release_id VARCHAR(64) NOT NULL",
				"version BIGINT NOT NULL",
				"arm VARCHAR(16) NOT NULL",
				"count BIGINT NOT NULL",
			},
			Primary: []string{"agent", "env", "minute_ms", "release_id", "version", "arm"},
		}); err != nil {
			return err
		}
		return sqlstore.CreateTable(tx, sqlstore.Table{
			Name: "release_outcomes",
			Columns: []string{
				sqlstore.AutoID(d),
				"agent " + id + " NOT NULL",
				"env " + id + " NOT NULL",
				"release_id VARCHAR(64) NOT NULL",
				"arm VARCHAR(16) NOT NULL",
				"version BIGINT NOT NULL",
				"reason VARCHAR(16) NOT NULL",
				"period INT NOT NULL",
				"period_bp INT NOT NULL",
				"success SMALLINT NOT NULL",
				"score DOUBLE NULL",
				"latency_ms BIGINT NULL",
				"at_ms BIGINT NOT NULL",
				"outcome_id " + sqlstore.KeyColumnType(d, 128) + " NULL",
				"token VARCHAR(256) NOT NULL",
				"created_at_ms BIGINT NOT NULL",
			},
			Indexes: map[string]string{"release_outcomes_release": "release_id, period, arm", "release_outcomes_created": "created_at_ms"},
			Unique:  map[string]string{"release_outcomes_dedupe": "agent, env, release_id, outcome_id"},
		})
	}}, {Component: "exposure", Version: 2, Name: "exposures_minute: the retention's walk from the oldest minute", Up: addMinuteIndex}}
}

// addMinuteIndex lets PruneExposures find the oldest minutes without a
// scan of the table. Created only when missing.
func addMinuteIndex(tx *gorm.DB) error {
	if tx.Migrator().HasIndex("exposures", "exposures_minute") {
		return nil
	}
	return tx.Exec(`CREATE INDEX exposures_minute ON exposures (minute_ms)`).Error
}
