package access

import (
	"fmt"

	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

// Gated is the error a write's transaction returns when env's protection
// covers the write: the transaction rolls back with nothing written, and
// the caller files a change request for it (Gate) instead. Target is the
// revision of the write's target as the transaction read it under lock.
type Gated struct {
	Agent, Env string
	Target     int64
}

func (e *Gated) Error() string {
	return fmt.Sprintf("access: writes to %q in env %q need approval", e.Agent, e.Env)
}

// CheckGate decides, inside tx (the transaction of a write to agent in
// env, which has read and locked the write's target at revision target),
// whether env's protection covers the write. It reads the protection row
// under lock, so that a protection set or changed concurrently either
// commits before the write sees it or waits for the write to commit. It
// returns nil when the write may go ahead, *Gated when it needs approval,
// and the read's error otherwise: a write whose gate cannot be read is
// refused, never let through. Agent "" is a write to the env itself (its
// protection): gated whenever the protection is in force.
func CheckGate(tx *gorm.DB, agent, env string, target int64) error {
	p, err := readProtection(tx, env, true)
	if err != nil {
		return fmt.Errorf("access: the protection of env %q is unreadable, the write is refused: %w", env, sqlstore.Translate(err))
	}
	if p == nil || p.Approvals == 0 || agent != "" && !p.Covers(agent) {
		return nil
	}
	return &Gated{Agent: agent, Env: env, Target: target}
}
