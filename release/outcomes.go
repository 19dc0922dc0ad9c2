package release

import (
	"context"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/release/guard"
)

// SQLOutcomes reads guards' outcomes from the release_outcomes table
// (package exposure writes it and documents its columns): one grouped
// query per release, over the index on (release_id, period, arm).
type SQLOutcomes struct {
	DB *gorm.DB
}

// GuardRows implements Outcomes.
func (o SQLOutcomes) GuardRows(ctx context.Context, id string, since time.Time) ([]guard.Row, error) {
	var rows []struct {
		Period      int
		Arm, Token  string
		N, Failures int64
		Scored      int64
		ScoreSum    float64
		ScoreSq     float64
	}
	err := o.DB.WithContext(ctx).Raw(`SELECT period, arm, token, COUNT(*) AS n,
		SUM(CASE WHEN success = 0 THEN 1 ELSE 0 END) AS failures, COUNT(score) AS scored,
		COALESCE(SUM(score), 0) AS score_sum, COALESCE(SUM(score * score), 0) AS score_sq
		FROM release_outcomes WHERE release_id = ? AND reason = 'bucket' AND at_ms >= ?
		GROUP BY period, arm, token`, id, since.UnixMilli()).Scan(&rows).Error
	if err != nil {
		return nil, err
	}
	out := make([]guard.Row, len(rows))
	for i, r := range rows {
		out[i] = guard.Row{Period: r.Period, Arm: r.Arm, Token: r.Token, N: r.N, Failures: r.Failures, Scored: r.Scored,
			ScoreSum: r.ScoreSum, ScoreSq: r.ScoreSq}
	}
	return out, nil
}
