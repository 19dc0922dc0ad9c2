package board

import (
	"context"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

// quotaWindow is the claims_per_minute window.
const quotaWindow = time.Minute

// countClaim counts a claim of actor against the board's
// claims_per_minute, cluster-wide: one short transaction of its own
// (never the claim's, so claimers of one actor do not queue on the
// counter row) increments the counter of the current minute by the SQL
// clock (now, read with the board's machine def). Over the quota: *QuotaExceeded with the time left in the window.
// win is the window counted in, -1 when nothing was counted (no quota);
// uncountAt gives the count back when the claim takes nothing.
func (s *Service) countClaim(ctx context.Context, board, actor string, def *Definition, now int64) (win int64, err error) {
	ctx, cancel := s.sqlCtx(sqlstore.WithoutCommitHooks(ctx))
	defer cancel()
	limit := def.Quota.ClaimsPerMinute
	if limit <= 0 {
		return -1, nil
	}
	win = now - now%quotaWindow.Milliseconds()
	n, err := sqlstore.Transact(ctx, s.db, func(tx *gorm.DB) (int64, error) {
		up := `INSERT INTO board_quota (board, actor, window_ms, claims) VALUES (?, ?, ?, 1) ON DUPLICATE KEY UPDATE claims = claims + 1`
		if sqlstore.Dialect(tx) != sqlstore.MySQL {
			up = `INSERT INTO board_quota (board, actor, window_ms, claims) VALUES (?, ?, ?, 1)
				ON CONFLICT (board, actor, window_ms) DO UPDATE SET claims = claims + 1`
		}
		if err := tx.Exec(up, board, actor, win).Error; err != nil {
			return 0, err
		}
		var n int64
		err := tx.Raw(`SELECT claims FROM board_quota WHERE board = ? AND actor = ? AND window_ms = ?`, board, actor, win).Scan(&n).Error
		return n, err
	})
	if err != nil {
		return -1, storeErr(err)
	}
	if n > limit {
		s.uncountAt(ctx, board, actor, win)
		left := time.Duration(win+quotaWindow.Milliseconds()-now) * time.Millisecond
		return -1, &QuotaExceeded{What: "claims_per_minute", Limit: limit, RetryAfter: left}
	}
	return win, nil
}

func (s *Service) uncountAt(ctx context.Context, board, actor string, win int64) {
	if win < 0 {
		return
	}
	ctx, cancel := s.sqlCtx(context.WithoutCancel(sqlstore.WithoutCommitHooks(ctx)))
	defer cancel()
	if err := s.db.WithContext(ctx).Exec(`UPDATE board_quota SET claims = claims - 1 WHERE board = ? AND actor = ? AND window_ms = ? AND claims > 0`,
		board, actor, win).Error; err != nil {
		s.log.Warn("board: giving back a claim quota count failed", "board", board, "err", err)
	}
}
