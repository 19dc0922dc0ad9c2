package board

import (
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

// quotaWindow is the claims_per_minute window.
const quotaWindow = time.Minute

// countClaim counts a claim of actor against the board's
// claims_per_minute, cluster-wide, within the claim's transaction once it
// took its record: the counter of the current minute by the SQL clock
// (now) is incremented there, so the count commits with the claim or
// rolls back with it. Over the quota: *QuotaExceeded with the time left in
// the window, and the claim rolls back. The counter row stays locked to
// the claim's commit, so claims of one actor on one board that do take
// records commit one after another; claimers that wait or find nothing
// never touch it.
func (s *Service) countClaim(tx *gorm.DB, board, actor string, def *Definition, now int64) error {
	limit := def.Quota.ClaimsPerMinute
	if limit <= 0 {
		return nil
	}
	win := now - now%quotaWindow.Milliseconds()
	up := `INSERT INTO board_quota (board, actor, window_ms, claims) VALUES (?, ?, ?, 1) ON DUPLICATE KEY UPDATE claims = claims + 1`
	if sqlstore.Dialect(tx) != sqlstore.MySQL {
		up = `INSERT INTO board_quota (board, actor, window_ms, claims) VALUES (?, ?, ?, 1)
			ON CONFLICT (board, actor, window_ms) DO UPDATE SET claims = claims + 1`
	}
	if err := tx.Exec(up, board, actor, win).Error; err != nil {
		return err
	}
	var n int64
	if err := tx.Raw(`SELECT claims FROM board_quota WHERE board = ? AND actor = ? AND window_ms = ?`, board, actor, win).Scan(&n).Error; err != nil {
		return err
	}
	if n > limit {
		left := time.Duration(win+quotaWindow.Milliseconds()-now) * time.Millisecond
		return &QuotaExceeded{What: "claims_per_minute", Limit: limit, RetryAfter: left}
	}
	return nil
}
