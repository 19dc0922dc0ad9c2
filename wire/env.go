package wire

// Env is an env pointer with its move history, the versions revoked in
// the env and its active release (nil: none): schema Env.
type Env struct {
	Agent     string   `json:"agent"`
	Env       string   `json:"env"`
	Version   int      `json:"version"`
	Revision  int64    `json:"revision"`
	UpdatedAt Time     `json:"updated_at"`
	UpdatedBy string   `json:"updated_by"`
	History   []Move   `json:"history"`
	Revoked   []int    `json:"revoked"`
	Release   *Release `json:"release"`
}

// IsRevoked reports whether version is revoked in the env.
func (e *Env) IsRevoked(version int) bool {
	for _, v := range e.Revoked {
		if v == version {
			return true
		}
	}
	return false
}

// Move is one move of an env pointer: schema Move.
type Move struct {
	FromVersion int    `json:"from_version"`
	ToVersion   int    `json:"to_version"`
	Revision    int64  `json:"revision"`
	Action      string `json:"action"`
	Reason      string `json:"reason,omitempty"`
	Actor       string `json:"actor"`
	At          Time   `json:"at"`
}

// EnvRollback is what an env rollback did: the env after it, the release
// rolled back if one was active, and the versions: schema EnvRollback.
type EnvRollback struct {
	Env         Env      `json:"env"`
	Release     *Release `json:"release"`
	FromVersion int      `json:"from_version"`
	ToVersion   int      `json:"to_version"`
}
