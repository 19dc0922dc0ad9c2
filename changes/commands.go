package changes

import (
	"encoding/json"
	"fmt"

	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/problem"
	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/release/guard"
)

// The gated actions, a change request's "action".
const (
	ActionPointerSwitch  = "pointer.switch"
	ActionEnvRollback    = "env.rollback"    // to a to_version other than the default target
	ActionLiftRevocation = "revocation.lift" // of a revoked version
	ActionReleaseCreate  = "release.create"  // any
	ActionReleasePatch   = "release.patch"   // a percent increase, candidate overrides added, a guard change while its trip holds the release
	ActionReleaseResume  = "release.resume"  // of a release its guard paused
	ActionReleasePromote = "release.promote" // any
	ActionProtectionSet  = "protection.set"  // a change that weakens it (access.Protection.WeakenedBy)
)

// CommandVersion is the format of the commands this package stores and
// applies. A change in a command's shape is a new version, with a
// migration that converts the pending requests of the old one.
const CommandVersion = 1

// The commands, one per action: what a change request stores and Approve
// runs. Agent, env and the target's revision are the request's own.
type (
	switchCommand struct {
		Version int    `json:"version"`
		Reason  string `json:"reason,omitempty"`
	}
	envRollbackCommand struct {
		ToVersion int    `json:"to_version"`
		Reason    string `json:"reason,omitempty"`
	}
	liftCommand struct {
		Version int `json:"version"`
	}
	// Overrides are stored hashed under the release id (raw ids are never
	// stored, see release.Overrides).
	hashedOverrides struct {
		Candidate []string `json:"candidate"`
		Baseline  []string `json:"baseline"`
	}
	releaseCreateCommand struct {
		ReleaseID        string           `json:"release_id"`
		CandidateVersion int              `json:"candidate_version"`
		Percent          string           `json:"percent"`
		Stickiness       string           `json:"stickiness,omitempty"`
		Steps            []release.Step   `json:"steps"`
		Message          string           `json:"message,omitempty"`
		Overrides        *hashedOverrides `json:"overrides,omitempty"`
		Guard            *guard.Config    `json:"guard,omitempty"`
	}
	// guardChange is a guard set (Config) or removed (Config nil).
	guardChange struct {
		Config *guard.Config `json:"config"`
	}
	releasePatchCommand struct {
		ReleaseID string           `json:"release_id"`
		Action    release.Action   `json:"action"`
		Percent   string           `json:"percent,omitempty"`
		Reason    string           `json:"reason,omitempty"`
		Overrides *hashedOverrides `json:"overrides,omitempty"`
		Guard     *guardChange     `json:"guard,omitempty"`
	}
	transitionCommand struct {
		ReleaseID string `json:"release_id"`
		Reason    string `json:"reason,omitempty"`
	}
	protectionCommand struct {
		Approvals int      `json:"approvals"`
		Agents    []string `json:"agents"`
		Approvers []string `json:"approvers"`
	}
)

func hashOverrides(releaseID string, o *release.OverridesInput) *hashedOverrides {
	h := o.HashedUnder(releaseID)
	if h == nil {
		return nil
	}
	return &hashedOverrides{Candidate: h.Candidate, Baseline: h.Baseline}
}

func (o *hashedOverrides) input() *release.OverridesInput {
	if o == nil {
		return nil
	}
	return &release.OverridesInput{Candidate: o.Candidate, Baseline: o.Baseline, Hashed: true}
}

func (g *guardChange) input() *release.GuardChange {
	if g == nil {
		return nil
	}
	return &release.GuardChange{Config: g.Config}
}

// UnreadableError: a change request's command cannot be applied (a format
// this binary does not know, or one that does not decode): the request is
// marked failed, never applied as something else.
type UnreadableError struct {
	ID, Action string
	Version    int
	Err        error
}

func (e *UnreadableError) Error() string {
	id := ""
	if e.ID != "" {
		id = e.ID + " "
	}
	return fmt.Sprintf("changes: change request %s(%s) holds a command of format %d, which this binary cannot apply: %v",
		id, e.Action, e.Version, e.Err)
}

func (e *UnreadableError) Unwrap() error { return e.Err }

// Problem is 500 internal naming the command's format: this binary cannot
// apply it, and nothing was changed.
func (e *UnreadableError) Problem() *problem.Problem {
	return (&problem.Problem{Code: problem.Internal,
		Detail: "this promptd cannot apply the change request's command; nothing was changed"}).With("command_version", e.Version)
}

// command decodes cr's command into v.
func command(cr *access.ChangeRequest, v any) error {
	if cr.CommandVersion != CommandVersion {
		return &UnreadableError{ID: cr.ID, Action: cr.Action, Version: cr.CommandVersion, Err: fmt.Errorf("format %d is not %d", cr.CommandVersion, CommandVersion)}
	}
	if err := json.Unmarshal(cr.Command, v); err != nil {
		return &UnreadableError{ID: cr.ID, Action: cr.Action, Version: cr.CommandVersion, Err: err}
	}
	return nil
}
