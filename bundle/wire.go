package bundle

import "encoding/json"

// Bundle is the answer of GET /v1/bundle: every version an env or an
// active release names, with its config, read in one transaction.
type Bundle struct {
	// Cursor is the change feed position the bundle reflects: subscribe
	// with since=Cursor and apply only newer revisions.
	Cursor string           `json:"cursor"`
	Agents map[string]Agent `json:"agents"`
}

// Agent is one agent's versions and envs.
type Agent struct {
	Versions map[int]Version `json:"versions"` // by version number ("1" on the wire)
	Envs     map[string]Env  `json:"envs"`
}

// Version is an immutable prompt version.
type Version struct {
	ContentHash string          `json:"content_hash"`
	Config      json.RawMessage `json:"config"`
}

// Env is an env pointer: the version it serves, its revision, the
// versions revoked in it and its active release.
type Env struct {
	Version  int      `json:"version"`
	Revision int64    `json:"revision"`
	Revoked  []int    `json:"revoked"`
	Release  *Release `json:"release"`
}

// Release is an env's active (running or paused) release.
type Release struct {
	ID               string     `json:"id"`
	State            string     `json:"state"`
	Revision         int64      `json:"revision"`
	BaselineVersion  int        `json:"baseline_version"`
	CandidateVersion int        `json:"candidate_version"`
	BasisPoints      int        `json:"basis_points"`
	Stickiness       string     `json:"stickiness"`
	Overrides        *Overrides `json:"overrides"`
}

// Overrides force callers into an arm ahead of bucketing: hex SHA-256 of
// "<release_id>:<key>" (prompt.OverrideID), key the stickiness key.
type Overrides struct {
	Candidate []string `json:"candidate"`
	Baseline  []string `json:"baseline"`
}

// Active reports whether the release decides arms: running or paused (a
// paused release keeps its arms).
func (r *Release) Active() bool {
	return r != nil && (r.State == "running" || r.State == "paused")
}
