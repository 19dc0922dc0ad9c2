package release

import (
	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

// Migrations create the releases and their transition history. The
// history's primary key (release, revision) makes a transition applied
// twice, or a gap-free history broken, impossible to write.
func Migrations() []sqlstore.Migration {
	return append([]sqlstore.Migration{{Component: "release", Version: 1, Name: "releases and release_history", Up: func(tx *gorm.DB) error {
		d := sqlstore.Dialect(tx)
		id := sqlstore.IDColumnType(d)
		if err := sqlstore.CreateTable(tx, sqlstore.Table{
			Name: "releases",
			Columns: []string{
				"id VARCHAR(64) NOT NULL",
				"agent " + id + " NOT NULL",
				"env " + id + " NOT NULL",
				"state VARCHAR(16) NOT NULL",
				"baseline_version BIGINT NOT NULL",
				"candidate_version BIGINT NOT NULL",
				"basis_points INT NOT NULL",
				"stickiness VARCHAR(16) NOT NULL",
				"steps TEXT NOT NULL",
				"steps_applied INT NOT NULL",
				"next_step_at_ms BIGINT NULL",
				"paused_left_ms BIGINT NULL",
				"revision BIGINT NOT NULL",
				"message TEXT NOT NULL",
				"created_by VARCHAR(256) NOT NULL",
				"created_at_ms BIGINT NOT NULL",
				"updated_at_ms BIGINT NOT NULL",
			},
			Primary: []string{"id"},
			Indexes: map[string]string{"releases_env": "agent, env, created_at_ms", "releases_due": "state, next_step_at_ms"},
		}); err != nil {
			return err
		}
		return sqlstore.CreateTable(tx, sqlstore.Table{
			Name: "release_history",
			Columns: []string{
				"release_id VARCHAR(64) NOT NULL",
				"revision BIGINT NOT NULL",
				"action VARCHAR(16) NOT NULL",
				"from_state VARCHAR(16) NOT NULL",
				"to_state VARCHAR(16) NOT NULL",
				"basis_points INT NOT NULL",
				"actor VARCHAR(256) NOT NULL",
				"reason TEXT NOT NULL",
				"at_ms BIGINT NOT NULL",
			},
			Primary: []string{"release_id", "revision"},
		})
	}}, {Component: "release_guard", Version: 1, Name: "releases.guard and the guard's trip and restart", Up: addGuardColumns},
		{Component: "release_guard", Version: 2, Name: "releases.paused_by_guard_at_ms (a trip's pause, kept whatever becomes of the guard)", Up: addPausedByGuard}},
		overrideMigrations()...)
}
