package release

import (
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm"

	"github.com/promptd/promptd/prompt"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/sqlstore"
	"github.com/promptd/promptd/wire"
)

// Overrides force listed callers onto an arm, ahead of bucketing. They
// are matched against the release's stickiness key (the user id, or the
// session id for session stickiness or a caller without a user id).
//
// Only hashes are kept: OverrideHash(release id, key), hex SHA-256 of
// "<release_id>:<key>". Raw ids are user identifiers (often e-mail
// addresses); they are checked and hashed when a request brings them and
// never stored, so neither SQL, the audit log, the change feed nor a GET
// can show them. The hash is all that resolution (here and in the SDKs,
// through the bundle) needs; an admin who wants to know whether an id is
// listed hashes it, or resolves it.
type Overrides = wire.Overrides

// OverridesInput are the raw ids of a create or PATCH: each list replaces
// the release's list (PATCH without overrides leaves them as they are).
type OverridesInput struct {
	Candidate []string
	Baseline  []string
	// Hashed: the lists hold OverrideHash values already (a gated write
	// stores no raw ids), used as they are.
	Hashed bool
}

// HashedUnder is o with its ids hashed under releaseID, as the release
// keeps them (never nil lists); o already hashed is copied as it is, and
// nil stays nil.
func (o *OverridesInput) HashedUnder(releaseID string) *Overrides {
	if o == nil {
		return nil
	}
	out := &Overrides{Candidate: []string{}, Baseline: []string{}}
	for _, l := range []struct {
		from []string
		to   *[]string
	}{{o.Candidate, &out.Candidate}, {o.Baseline, &out.Baseline}} {
		for _, id := range l.from {
			if !o.Hashed {
				id = OverrideHash(releaseID, id)
			}
			*l.to = append(*l.to, id)
		}
	}
	return out
}

// MaxOverrides is how many ids each list may hold.
const MaxOverrides = 1000

// CodeInvalidOverrides: an id on both lists, or too many ids (422).
const CodeInvalidOverrides = "invalid_overrides"

// Arms.
const (
	ArmBaseline  = "baseline"
	ArmCandidate = "candidate"
)

// Resolution reasons of a release arm (the trace's reason).
const (
	ReasonBucket   = "bucket"
	ReasonOverride = "override"
)

// OverrideHash is the stored form of an override key: hex SHA-256 of
// "<release_id>:<key>".
func OverrideHash(releaseID, key string) string { return prompt.OverrideID(releaseID, key) }

// Override is the arm rel forces on key, the caller's stickiness key
// (StickyKey), if one of its override lists names it. It is the one
// override check of resolution, ahead of bucketing.
func Override(rel *Release, key string) (arm string, ok bool) {
	if key == "" {
		return "", false
	}
	arm = rel.forced.Lookup(rel.ID, key)
	return arm, arm != ""
}

// StickyKey is the key a caller is bucketed and matched on: the user id,
// or the session id for session stickiness or when there is no user id.
func StickyKey(rel *Release, userID, sessionID string) string {
	if rel.Stickiness == StickySession || userID == "" {
		return sessionID
	}
	return userID
}

// hashOverrides checks the ids of in (the opaque user_id rule, at most
// MaxOverrides a list, none on both lists) and returns their hashes under
// releaseID, sorted and without repeats.
func hashOverrides(releaseID string, in *OverridesInput) (Overrides, error) {
	out := Overrides{Candidate: []string{}, Baseline: []string{}}
	if in == nil {
		return out, nil
	}
	seen := map[string]string{}
	for _, l := range []struct {
		arm string
		ids []string
		dst *[]string
	}{{ArmCandidate, in.Candidate, &out.Candidate}, {ArmBaseline, in.Baseline, &out.Baseline}} {
		if len(l.ids) > MaxOverrides {
			return Overrides{}, invalidf(CodeInvalidOverrides, "overrides."+l.arm, "at most %d ids a list", MaxOverrides)
		}
		for i, id := range l.ids {
			field := fmt.Sprintf("overrides.%s[%d]", l.arm, i)
			h := id
			if !in.Hashed {
				if err := promptstore.ValidateOpaque(field, id); err != nil {
					return Overrides{}, err
				}
				h = OverrideHash(releaseID, id)
			} else if !isOverrideHash(id) {
				return Overrides{}, invalidf(CodeInvalidOverrides, field, "a hashed override is 64 lowercase hex digits")
			}
			switch seen[h] {
			case "":
				seen[h] = l.arm
				*l.dst = append(*l.dst, h)
			case l.arm: // listed twice on one list: once is enough
			default:
				return Overrides{}, invalidf(CodeInvalidOverrides, field, "an id may be on one override list only")
			}
		}
		slices.Sort(*l.dst)
	}
	return out, nil
}

func isOverrideHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// overrideMigrations create release_overrides: one row per (release,
// hashed key), so a key can be forced onto one arm only. A component of
// its own, so the release table's migrations stay free for other changes.
func overrideMigrations() []sqlstore.Migration {
	return []sqlstore.Migration{{Component: "release_overrides", Version: 1, Name: "release_overrides (hashed keys forced onto an arm)", Up: func(tx *gorm.DB) error {
		return sqlstore.CreateTable(tx, sqlstore.Table{
			Name: "release_overrides",
			Columns: []string{
				"release_id VARCHAR(64) NOT NULL",
				"key_hash CHAR(64) NOT NULL",
				"arm VARCHAR(16) NOT NULL",
			},
			Primary: []string{"release_id", "key_hash"},
		})
	}}}
}

// writeOverrides replaces the override lists of release id within tx.
func writeOverrides(tx *gorm.DB, id string, o Overrides) error {
	if err := tx.Exec(`DELETE FROM release_overrides WHERE release_id = ?`, id).Error; err != nil {
		return err
	}
	type row struct{ hash, arm string }
	rows := make([]row, 0, len(o.Candidate)+len(o.Baseline))
	for _, h := range o.Candidate {
		rows = append(rows, row{h, ArmCandidate})
	}
	for _, h := range o.Baseline {
		rows = append(rows, row{h, ArmBaseline})
	}
	for chunk := range slices.Chunk(rows, 500) { // two statements at most (2,000 ids)
		args := make([]any, 0, 3*len(chunk))
		for _, r := range chunk {
			args = append(args, id, r.hash, r.arm)
		}
		values := strings.Repeat("(?, ?, ?), ", len(chunk))
		if err := tx.Exec(`INSERT INTO release_overrides (release_id, key_hash, arm) VALUES `+values[:len(values)-2], args...).Error; err != nil {
			return err
		}
	}
	return nil
}

// readOverrides loads the override lists of the releases rels (one query).
func readOverrides(tx *gorm.DB, rels ...*Release) error {
	if len(rels) == 0 {
		return nil
	}
	byID := make(map[string]*Release, len(rels))
	ids := make([]string, len(rels))
	for i, r := range rels {
		byID[r.ID], ids[i] = r, r.ID
		r.Overrides, r.forced = Overrides{Candidate: []string{}, Baseline: []string{}}, nil
	}
	var rows []struct{ ReleaseID, KeyHash, Arm string }
	if err := tx.Raw(`SELECT release_id, key_hash, arm FROM release_overrides WHERE release_id IN ? ORDER BY key_hash`, ids).
		Scan(&rows).Error; err != nil {
		return err
	}
	for _, row := range rows {
		r := byID[row.ReleaseID]
		if row.Arm == ArmCandidate {
			r.Overrides.Candidate = append(r.Overrides.Candidate, row.KeyHash)
		} else {
			r.Overrides.Baseline = append(r.Overrides.Baseline, row.KeyHash)
		}
	}
	for _, r := range rels {
		if len(r.Overrides.Candidate)+len(r.Overrides.Baseline) > 0 {
			r.forced = prompt.NewOverrides(r.Overrides.Candidate, r.Overrides.Baseline)
		}
	}
	return nil
}

// complete reads what a release shows besides its row: its history and
// its override lists.
func complete(tx *gorm.DB, rel *Release) error {
	if err := readHistory(tx, rel); err != nil {
		return err
	}
	return readOverrides(tx, rel)
}

// overrideCounts is what events say of override lists: how many ids each
// holds, never which.
func overrideCounts(o Overrides) map[string]int {
	return map[string]int{"candidate": len(o.Candidate), "baseline": len(o.Baseline)}
}
