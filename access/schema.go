package access

import (
	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

// createsRow is the access_meta row that token creates update first: its
// row lock makes the count against MaxTokens exact across instances.
const createsRow = "token_creates"

// Migrations create access_tokens (managed tokens, kept after revocation
// so a name is never reused), access_meta, the protections and change
// requests (changeMigrations) and the console sessions (consoleMigrations).
func Migrations() []sqlstore.Migration {
	return []sqlstore.Migration{{Component: "access", Version: 1, Name: "access_tokens and access_meta", Up: func(tx *gorm.DB) error {
		d := sqlstore.Dialect(tx)
		if err := sqlstore.CreateTable(tx, sqlstore.Table{
			Name: "access_tokens",
			Columns: []string{
				sqlstore.AutoID(d),
				"token_id " + sqlstore.KeyColumnType(d, 64) + " NOT NULL",
				"name " + sqlstore.IDColumnType(d) + " NOT NULL",
				"role VARCHAR(16) NOT NULL",
				"scopes TEXT NOT NULL",
				"secret_hash " + sqlstore.KeyColumnType(d, 64) + " NOT NULL",
				"principal VARCHAR(256) NOT NULL",
				"created_by VARCHAR(256) NOT NULL",
				"created_at_ms BIGINT NOT NULL",
				"expires_at_ms BIGINT NOT NULL",
				"revoked_at_ms BIGINT NOT NULL",
				"last_used_at_ms BIGINT NOT NULL",
			},
			Unique: map[string]string{
				"access_tokens_token_id": "token_id",
				"access_tokens_name":     "name",
				"access_tokens_secret":   "secret_hash",
			},
		}); err != nil {
			return err
		}
		if err := sqlstore.CreateTable(tx, sqlstore.Table{
			Name:    "access_meta",
			Columns: []string{"name VARCHAR(64) NOT NULL", "n BIGINT NOT NULL"},
			Primary: []string{"name"},
		}); err != nil {
			return err
		}
		if err := tx.Exec(`INSERT INTO access_meta (name, n) VALUES (?, 0)`, createsRow).Error; err != nil && !sqlstore.IsDuplicate(err) {
			return err
		}
		return nil
	}}, changeMigrations()[0], consoleMigrations()[0], consoleMigrations()[1], changeMigrations()[1]}
}

// changeMigrations create access_protections (one row per protected env)
// and access_change_requests (gated writes waiting for approval).
func changeMigrations() []sqlstore.Migration {
	return []sqlstore.Migration{{Component: "access", Version: 2, Name: "access_protections and access_change_requests", Up: func(tx *gorm.DB) error {
		d := sqlstore.Dialect(tx)
		if err := sqlstore.CreateTable(tx, sqlstore.Table{
			Name: "access_protections",
			Columns: []string{
				"env " + sqlstore.IDColumnType(d) + " NOT NULL",
				"approvals INT NOT NULL",
				"agents TEXT NOT NULL",
				"approvers TEXT NOT NULL",
				"revision BIGINT NOT NULL",
				"updated_by VARCHAR(256) NOT NULL",
				"updated_at_ms BIGINT NOT NULL",
			},
			Primary: []string{"env"},
		}); err != nil {
			return err
		}
		return sqlstore.CreateTable(tx, sqlstore.Table{
			Name: "access_change_requests",
			Columns: []string{
				sqlstore.AutoID(d),
				"cr_id " + sqlstore.KeyColumnType(d, 64) + " NOT NULL",
				"action VARCHAR(64) NOT NULL",
				"agent " + sqlstore.IDColumnType(d) + " NOT NULL",
				"env " + sqlstore.IDColumnType(d) + " NOT NULL",
				"request " + sqlstore.LongText(d) + " NOT NULL",
				"target_revision BIGINT NOT NULL",
				"requested_by VARCHAR(256) NOT NULL",
				"requested_token VARCHAR(256) NOT NULL",
				"state VARCHAR(16) NOT NULL",
				"approvals TEXT NOT NULL",
				"needed INT NOT NULL",
				"approvers TEXT NOT NULL",
				"problem TEXT NOT NULL",
				"revision BIGINT NOT NULL",
				"created_at_ms BIGINT NOT NULL",
				"expires_at_ms BIGINT NOT NULL",
				"updated_at_ms BIGINT NOT NULL",
			},
			Unique:  map[string]string{"access_change_requests_id": "cr_id"},
			Indexes: map[string]string{"access_change_requests_state": "state, id"},
		})
	}}, {Component: "access", Version: 5, Name: "access_change_requests: command and command_version (what approval runs)", Up: func(tx *gorm.DB) error {
		if err := tx.Exec(`ALTER TABLE access_change_requests ADD COLUMN command ` + sqlstore.LongText(sqlstore.Dialect(tx)) + ` NULL`).Error; err != nil {
			return err
		}
		return tx.Exec(`ALTER TABLE access_change_requests ADD COLUMN command_version INT NOT NULL DEFAULT 0`).Error
	}}}
}
