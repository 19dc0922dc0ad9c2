package bundle

import "encoding/json"

// Bundle is the answer of GET /v1/bundle: every version an env or an
// active release names, with its config, read in one transaction.
type Bundle struct {
	// Format is the bundle's format number: absent (0) or 1 before
	// fragments, Format since. An evaluator answers only formats it
	// knows (KnownFormat); for any other it asks the server.
	Format int `json:"format,omitempty"`
	// Cursor is the change feed position the bundle reflects: subscribe
	// with since=Cursor and apply only newer revisions.
	Cursor string           `json:"cursor"`
	Agents map[string]Agent `json:"agents"`
}

// Format is the newest bundle format this package knows: 2, whose
// configs may hold pinned fragments (prompt.FragmentRef) that an
// evaluator renders ({{> alias}} and {"fragment": alias} messages).
const Format = 2

// KnownFormat reports whether an evaluator of this package answers from
// a bundle of format f (0, absent, is format 1).
func KnownFormat(f int) bool { return f >= 0 && f <= Format }

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
