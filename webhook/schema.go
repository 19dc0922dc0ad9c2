package webhook

import (
	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

// createsRow is the webhook_cursor row that webhook creates update first:
// its row lock makes the count against MaxWebhooks exact across instances.
const createsRow = "creates"

// Migrations create the webhooks, their deliveries and the dispatcher's
// cursor. A delivery's unique key (webhook_id, seq) makes a second
// delivery of one event to one webhook impossible to write.
func Migrations() []sqlstore.Migration {
	return []sqlstore.Migration{{Component: "webhook", Version: 1, Name: "webhooks, webhook_deliveries and webhook_cursor", Up: func(tx *gorm.DB) error {
		d := sqlstore.Dialect(tx)
		key := sqlstore.KeyColumnType(d, 64)
		if err := sqlstore.CreateTable(tx, sqlstore.Table{
			Name: "webhooks",
			Columns: []string{
				"id " + key + " NOT NULL",
				"url TEXT NOT NULL",
				"actions TEXT NOT NULL",
				"agents TEXT NOT NULL",
				"description TEXT NOT NULL",
				"enabled INT NOT NULL",
				"revision BIGINT NOT NULL",
				"after_seq BIGINT NOT NULL",
				"secret TEXT NOT NULL",
				"old_secret TEXT NOT NULL",
				"old_secret_until_ms BIGINT NOT NULL",
				"created_at_ms BIGINT NOT NULL",
				"updated_at_ms BIGINT NOT NULL",
			},
			Primary: []string{"id"},
		}); err != nil {
			return err
		}
		if err := sqlstore.CreateTable(tx, sqlstore.Table{
			Name: "webhook_deliveries",
			Columns: []string{
				sqlstore.AutoID(d),
				"webhook_id " + key + " NOT NULL",
				"seq BIGINT NOT NULL",
				"action VARCHAR(64) NOT NULL",
				"body " + sqlstore.LongText(d) + " NOT NULL",
				"state VARCHAR(16) NOT NULL",
				"attempts INT NOT NULL",
				"retry_base INT NOT NULL",
				"next_attempt_at_ms BIGINT NOT NULL",
				"lease_until_ms BIGINT NOT NULL",
				"last_status INT NOT NULL",
				"last_error VARCHAR(32) NOT NULL",
				"created_at_ms BIGINT NOT NULL",
				"updated_at_ms BIGINT NOT NULL",
			},
			Unique: map[string]string{"webhook_deliveries_event": "webhook_id, seq"},
			Indexes: map[string]string{
				"webhook_deliveries_due":  "state, next_attempt_at_ms, webhook_id",
				"webhook_deliveries_list": "webhook_id, id",
				"webhook_deliveries_age":  "state, created_at_ms",
			},
		}); err != nil {
			return err
		}
		if err := sqlstore.CreateTable(tx, sqlstore.Table{
			Name:    "webhook_cursor",
			Columns: []string{"name VARCHAR(64) NOT NULL", "seq BIGINT NOT NULL"},
			Primary: []string{"name"},
		}); err != nil {
			return err
		}
		// The row creates lock, so that two instances never both create
		// the 100th webhook.
		if err := tx.Exec(`INSERT INTO webhook_cursor (name, seq) VALUES (?, 0)`, createsRow).Error; err != nil && !sqlstore.IsDuplicate(err) {
			return err
		}
		return nil
	}}}
}
