package changes

import (
	"encoding/json"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/release/guard"
	"github.com/promptd/promptd/sqlstore"
)

// Migrations are this package's schema migrations: version 1 converts the
// pending change requests filed before commands were stored (format 0:
// only the HTTP body) into commands of format 1. It runs after access's
// migrations (component order), which add the command columns.
func Migrations() []sqlstore.Migration {
	return []sqlstore.Migration{{Component: "changes", Version: 1, Name: "pending change requests: HTTP bodies to commands (format 1)",
		Up: func(tx *gorm.DB) error {
			_, _, err := access.ConvertCommands(tx, legacyCommand)
			return err
		}}}
}

// The bodies pending requests stored before format 1, as the HTTP API of
// that time received and stored them (frozen: only this migration reads
// them).
type (
	legacySwitch struct {
		Version *int   `json:"version"`
		Reason  string `json:"reason"`
	}
	legacyEnvRollback struct {
		ToVersion *int   `json:"to_version"`
		Reason    string `json:"reason"`
	}
	legacyLift struct {
		Version int `json:"version"`
	}
	legacyPatch struct {
		ReleaseID string           `json:"release_id"`
		Percent   string           `json:"percent"`
		Reason    string           `json:"reason"`
		Overrides *hashedOverrides `json:"overrides"`
		Guard     json.RawMessage  `json:"guard"` // the HTTP guard object; null removes it
	}
	legacyProtection struct {
		Approvals *int     `json:"approvals"`
		Agents    []string `json:"agents"`
		Approvers []string `json:"approvers"`
	}
)

var errLegacy = errors.New("changes: the stored request is not one the earlier API stored")

// legacyCommand is the command of format 1 that a request of action,
// stored as the earlier API stored it, asked for.
func legacyCommand(action string, request json.RawMessage) (any, int, error) {
	bad := func(err error) (any, int, error) {
		return nil, 0, &UnreadableError{Action: action, Err: fmt.Errorf("%w: %v", errLegacy, err)}
	}
	switch action {
	case ActionPointerSwitch:
		var r legacySwitch
		if err := json.Unmarshal(request, &r); err != nil || r.Version == nil {
			return bad(errors.Join(err, errors.New("no version")))
		}
		return switchCommand{Version: *r.Version, Reason: r.Reason}, CommandVersion, nil
	case ActionEnvRollback:
		var r legacyEnvRollback
		if err := json.Unmarshal(request, &r); err != nil || r.ToVersion == nil {
			return bad(errors.Join(err, errors.New("no to_version")))
		}
		return envRollbackCommand{ToVersion: *r.ToVersion, Reason: r.Reason}, CommandVersion, nil
	case ActionLiftRevocation:
		var r legacyLift
		if err := json.Unmarshal(request, &r); err != nil {
			return bad(err)
		}
		return liftCommand(r), CommandVersion, nil
	case ActionReleaseCreate: // stored already as the command it is
		var c releaseCreateCommand
		if err := json.Unmarshal(request, &c); err != nil || c.ReleaseID == "" {
			return bad(errors.Join(err, errors.New("no release_id")))
		}
		return c, CommandVersion, nil
	case ActionReleasePatch:
		var r legacyPatch
		if err := json.Unmarshal(request, &r); err != nil || r.ReleaseID == "" {
			return bad(errors.Join(err, errors.New("no release_id")))
		}
		c := releasePatchCommand{ReleaseID: r.ReleaseID, Percent: r.Percent, Reason: r.Reason, Overrides: r.Overrides}
		switch g := string(r.Guard); g {
		case "":
		case "null":
			c.Guard = &guardChange{}
		default:
			var in guard.Input
			if err := json.Unmarshal(r.Guard, &in); err != nil {
				return bad(err)
			}
			cfg, err := release.ParseGuard(in)
			if err != nil {
				return bad(err)
			}
			c.Guard = &guardChange{Config: cfg}
		}
		switch { // the earlier API's choice of transition
		case c.Percent == "" && r.Overrides != nil:
			c.Action = release.ActOverrides
		case c.Percent == "" && c.Guard != nil:
			c.Action = release.ActGuard
		default:
			c.Action = release.ActPercent
		}
		return c, CommandVersion, nil
	case ActionReleaseResume, ActionReleasePromote:
		var c transitionCommand
		if err := json.Unmarshal(request, &c); err != nil || c.ReleaseID == "" {
			return bad(errors.Join(err, errors.New("no release_id")))
		}
		return c, CommandVersion, nil
	case ActionProtectionSet:
		var r legacyProtection
		if err := json.Unmarshal(request, &r); err != nil || r.Approvals == nil {
			return bad(errors.Join(err, errors.New("no approvals")))
		}
		return protectionCommand{Approvals: *r.Approvals, Agents: r.Agents, Approvers: r.Approvers}, CommandVersion, nil
	}
	return bad(errors.New("unknown action"))
}
