package promptstore

import (
	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

// Migrations are the prompt store's schema, versioned. Versions are
// immutable rows; every mutable row (agents, env pointers) has a revision.
// Times are Unix milliseconds.
func Migrations() []sqlstore.Migration {
	return []sqlstore.Migration{{Component: "promptstore", Version: 1, Name: "agents, versions, env pointers, moves, revocations", Up: func(tx *gorm.DB) error {
		d := sqlstore.Dialect(tx)
		id := sqlstore.IDColumnType(d)
		tables := []sqlstore.Table{{
			Name: "prompt_agents",
			Columns: []string{
				"agent " + id + " NOT NULL",
				"latest_version BIGINT NOT NULL",
				"latest_content_hash VARCHAR(80) NOT NULL",
				"revision BIGINT NOT NULL",
				"created_at_ms BIGINT NOT NULL",
				"updated_at_ms BIGINT NOT NULL",
			},
			Primary: []string{"agent"},
		}, {
			Name: "prompt_versions",
			Columns: []string{
				"agent " + id + " NOT NULL",
				"version BIGINT NOT NULL",
				"config " + sqlstore.LongText(d) + " NOT NULL",
				"content_hash VARCHAR(80) NOT NULL",
				"message TEXT NOT NULL",
				"created_by VARCHAR(256) NOT NULL",
				"created_at_ms BIGINT NOT NULL",
			},
			Primary: []string{"agent", "version"},
		}, {
			Name: "prompt_env_pointers",
			Columns: []string{
				"agent " + id + " NOT NULL",
				"env " + id + " NOT NULL",
				"version BIGINT NOT NULL",
				"revision BIGINT NOT NULL",
				"active_release_id VARCHAR(64) NULL",
				"updated_at_ms BIGINT NOT NULL",
				"updated_by VARCHAR(256) NOT NULL",
			},
			Primary: []string{"agent", "env"},
		}, {
			Name: "prompt_pointer_moves",
			Columns: []string{
				sqlstore.AutoID(d),
				"agent " + id + " NOT NULL",
				"env " + id + " NOT NULL",
				"from_version BIGINT NOT NULL",
				"to_version BIGINT NOT NULL",
				"revision BIGINT NOT NULL",
				"action VARCHAR(32) NOT NULL",
				"reason TEXT NOT NULL",
				"actor VARCHAR(256) NOT NULL",
				"at_ms BIGINT NOT NULL",
			},
			Indexes: map[string]string{"prompt_pointer_moves_env": "agent, env, id"},
		}, {
			Name: "prompt_revocations",
			Columns: []string{
				"agent " + id + " NOT NULL",
				"env " + id + " NOT NULL",
				"version BIGINT NOT NULL",
				"reason TEXT NOT NULL",
				"revoked_by VARCHAR(256) NOT NULL",
				"revoked_at_ms BIGINT NOT NULL",
			},
			Primary: []string{"agent", "env", "version"},
		}}
		for _, t := range tables {
			if err := sqlstore.CreateTable(tx, t); err != nil {
				return err
			}
		}
		return nil
	}}, {Component: "promptstore", Version: 2, Name: "prompt_versions.merge_base: the base a merged version's author started from", Up: addMergeBase}, fragmentMigration()}
}

// addMergeBase records, for a version created by a three-way merge, the
// version its author started from (its other parent is the version before
// it, the one merged over); NULL for every other version.
func addMergeBase(tx *gorm.DB) error {
	if tx.Migrator().HasColumn("prompt_versions", "merge_base") {
		return nil
	}
	return tx.Exec(`ALTER TABLE prompt_versions ADD COLUMN merge_base INT NULL`).Error
}
