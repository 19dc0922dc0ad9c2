package telemetry

import (
	"errors"

	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"
)

// InstrumentSQL traces every statement of db as a client span (see
// sqlPlugin). It does nothing when tracing is off.
func InstrumentSQL(db *gorm.DB) error {
	if !Enabled() {
		return nil
	}
	if err := db.Use(&sqlPlugin{system: sqlSystem(db.Dialector.Name())}); err != nil && !errors.Is(err, gorm.ErrRegistered) {
		return err
	}
	return nil
}

// InstrumentRedis traces every command of rdb as a client span: the
// command's name, never its arguments (keys, tokens, values). It does
// nothing when tracing is off.
func InstrumentRedis(rdb redis.UniversalClient) error {
	if !Enabled() || rdb == nil {
		return nil
	}
	return redisotel.InstrumentTracing(rdb, redisotel.WithDBStatement(false), redisotel.WithCallerEnabled(false))
}
