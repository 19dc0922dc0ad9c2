package board

import (
	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

// Migrations create boards, their records, the dedupe keys (the
// processed-ID set), the claim quota counters and the boards' creators.
func Migrations() []sqlstore.Migration {
	return []sqlstore.Migration{{Component: "board", Version: 1, Name: "boards, board_records, board_dedupe, board_quota", Up: func(tx *gorm.DB) error {
		d := sqlstore.Dialect(tx)
		id := sqlstore.IDColumnType(d)
		opaque := sqlstore.KeyColumnType(d, 256)
		long := sqlstore.LongText(d)
		for _, t := range []sqlstore.Table{{
			Name: "boards",
			Columns: []string{
				"board " + id + " NOT NULL",
				"revision BIGINT NOT NULL",
				"definition " + long + " NOT NULL",
				"created_at_ms BIGINT NOT NULL",
				"updated_at_ms BIGINT NOT NULL",
			},
			Primary: []string{"board"},
		}, {
			Name: "board_records",
			Columns: []string{
				"board " + id + " NOT NULL",
				"id " + id + " NOT NULL",
				"revision BIGINT NOT NULL",
				"state " + sqlstore.KeyColumnType(d, 64) + " NOT NULL",
				"owner " + opaque + " NOT NULL",
				"fence BIGINT NOT NULL",
				"claim_expires_at_ms BIGINT NULL",
				"claim_ttl_ms BIGINT NOT NULL",
				"priority BIGINT NOT NULL",
				"attempts BIGINT NOT NULL",
				"payload " + long + " NOT NULL",
				"dedupe_key " + opaque + " NULL",
				"open_rec SMALLINT NOT NULL", // 1 while not terminal (the per-board limit counts these)
				"created_at_ms BIGINT NOT NULL",
				"updated_at_ms BIGINT NOT NULL",
			},
			Primary: []string{"board", "id"},
			Indexes: map[string]string{
				// claim-next's scan: the from state in board order
				"board_records_order": "board, state, priority DESC, created_at_ms, id",
				// expired claims (reclaim in the claim, and the sweeper)
				"board_records_expiry": "board, claim_expires_at_ms",
				// expired claims across boards (the sweeper)
				"board_records_expiring": "claim_expires_at_ms",
				"board_records_list":     "board, priority DESC, created_at_ms, id",
				"board_records_open":     "board, open_rec, updated_at_ms",
				"board_records_owner":    "board, owner",
			},
		}, {
			Name: "board_dedupe",
			Columns: []string{
				"board " + id + " NOT NULL",
				"dedupe_key " + opaque + " NOT NULL",
				"record_id " + id + " NOT NULL",
				"expires_at_ms BIGINT NOT NULL",
			},
			Primary: []string{"board", "dedupe_key"},
			Indexes: map[string]string{"board_dedupe_expiry": "expires_at_ms"},
		}, {
			Name: "board_quota",
			Columns: []string{
				"board " + id + " NOT NULL",
				"actor " + opaque + " NOT NULL",
				"window_ms BIGINT NOT NULL",
				"claims BIGINT NOT NULL",
			},
			Primary: []string{"board", "actor", "window_ms"},
			Indexes: map[string]string{"board_quota_window": "window_ms"},
		}} {
			if err := sqlstore.CreateTable(tx, t); err != nil {
				return err
			}
		}
		return nil
	}}, {Component: "board", Version: 2, Name: "boards.created_by and board_creators, the per-token board count", Up: addCreators},
		{Component: "board", Version: 3, Name: "board_record_payloads (merge bases) and board_batches (commit proofs)", Up: addBatches}}
}

// addCreators records the token that created each board (boards created
// before it: "", deletable by an admin token only) and counts the boards
// of each creator, the count the per-token limit is checked on.
func addCreators(tx *gorm.DB) error {
	d := sqlstore.Dialect(tx)
	if !tx.Migrator().HasColumn("boards", "created_by") {
		if err := tx.Exec(`ALTER TABLE boards ADD COLUMN created_by ` + sqlstore.KeyColumnType(d, 256) + ` NOT NULL DEFAULT ''`).Error; err != nil {
			return err
		}
	}
	if err := sqlstore.CreateTable(tx, sqlstore.Table{
		Name:    "board_creators",
		Columns: []string{"created_by " + sqlstore.KeyColumnType(d, 256) + " NOT NULL", "boards BIGINT NOT NULL"},
		Primary: []string{"created_by"},
	}); err != nil {
		return err
	}
	if err := tx.Exec(`DELETE FROM board_creators`).Error; err != nil {
		return err
	}
	return tx.Exec(`INSERT INTO board_creators (created_by, boards) SELECT created_by, COUNT(*) FROM boards GROUP BY created_by`).Error
}

// addBatches keeps the last payloads of each record (a merge's base is
// one of them) and the applied batches with their proofs.
func addBatches(tx *gorm.DB) error {
	d := sqlstore.Dialect(tx)
	id, long := sqlstore.IDColumnType(d), sqlstore.LongText(d)
	for _, t := range []sqlstore.Table{{
		Name: "board_record_payloads",
		Columns: []string{
			"board " + id + " NOT NULL",
			"id " + id + " NOT NULL",
			"revision BIGINT NOT NULL",
			"content_hash " + sqlstore.KeyColumnType(d, 80) + " NOT NULL",
			"payload " + long + " NOT NULL",
		},
		Primary: []string{"board", "id", "revision"},
	}, {
		Name: "board_batches",
		Columns: []string{
			"board " + id + " NOT NULL",
			"id " + id + " NOT NULL",
			"fingerprint " + sqlstore.KeyColumnType(d, 80) + " NOT NULL",
			"body " + long + " NOT NULL",
			"created_at_ms BIGINT NOT NULL",
		},
		Primary: []string{"board", "id"},
		Indexes: map[string]string{"board_batches_created": "created_at_ms"},
	}} {
		if err := sqlstore.CreateTable(tx, t); err != nil {
			return err
		}
	}
	return nil
}
