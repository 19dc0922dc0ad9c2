package sqlstore

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	gormlogger "gorm.io/gorm/logger"
)

// logger adapts gorm's logger to slog. It logs slow statements (without
// their parameters, which may hold prompt text or user ids) and gorm's own
// warnings and errors. Failed statements are not logged here: the error
// goes back to the caller, and only the caller knows whether it was
// expected (a duplicate key) or not.
type logger struct {
	log  *slog.Logger
	slow time.Duration
}

func newLogger(log *slog.Logger, slow time.Duration) gormlogger.Interface {
	return &logger{log: log, slow: slow}
}

// LogMode implements gormlogger.Interface; the level is slog's business.
func (l *logger) LogMode(gormlogger.LogLevel) gormlogger.Interface { return l }

func (l *logger) Info(ctx context.Context, msg string, args ...any) {
	l.log.DebugContext(ctx, "gorm: "+fmt.Sprintf(msg, args...))
}

func (l *logger) Warn(ctx context.Context, msg string, args ...any) {
	l.log.WarnContext(ctx, "gorm: "+fmt.Sprintf(msg, args...))
}

func (l *logger) Error(ctx context.Context, msg string, args ...any) {
	l.log.ErrorContext(ctx, "gorm: "+fmt.Sprintf(msg, args...))
}

// Trace implements gormlogger.Interface.
func (l *logger) Trace(ctx context.Context, begin time.Time, fc func() (string, int64), _ error) {
	elapsed := time.Since(begin)
	if elapsed <= l.slow {
		return
	}
	sql, rows := fc()
	l.log.WarnContext(ctx, "slow SQL statement",
		"duration_ms", elapsed.Milliseconds(), "sql", sql, "rows", rows)
}

// ParamsFilter implements gormlogger.ParamsFilter: statements are logged
// with placeholders, never with their values.
func (l *logger) ParamsFilter(_ context.Context, sql string, _ ...any) (string, []any) {
	return sql, nil
}
