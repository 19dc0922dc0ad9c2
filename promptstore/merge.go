package promptstore

import (
	"fmt"

	"gorm.io/gorm"

	"github.com/promptd/promptd/jsonmerge"
	"github.com/promptd/promptd/problem"
	"github.com/promptd/promptd/prompt"
	"github.com/promptd/promptd/sqlstore"
)

// MergeKeys identify the elements of a config's arrays of objects in a
// merge: skills and named messages by "name", tools by their function's
// name. An array whose elements are not all keyed (messages without
// names, memory) is one value.
var MergeKeys = []string{"name", "function.name"}

// MergeConflict: a merge of a stale create met changes on both sides at
// the same paths. Paths are per path the base, ours and theirs values.
type MergeConflict struct {
	Agent        string
	Base, Latest int
	Paths        []jsonmerge.Conflict
}

func (e *MergeConflict) Error() string {
	return fmt.Sprintf("promptstore: %s: merge of base %d over %d conflicts at %d paths", e.Agent, e.Base, e.Latest, len(e.Paths))
}

// Problem is 409 merge_conflict with the paths, the base and the latest
// version.
func (e *MergeConflict) Problem() *problem.Problem {
	return (&problem.Problem{Code: problem.MergeConflict, Detail: fmt.Sprintf(
		"versions %d..%d of %s changed %d paths this config changes too; resolve them and resubmit on base_version %d",
		e.Base+1, e.Latest, e.Agent, len(e.Paths), e.Latest)}).
		With("conflicts", e.Paths).With("latest_version", e.Latest).With("base_version", e.Base)
}

// mergeOver is p made a create over the agent's latest version, locked in
// tx: p as it is when its base is the latest; else the three-way merge of
// p's config (ours) with the latest (theirs) from the base's config (an
// empty config for base 0), validated like any config, or *MergeConflict.
func (s *Store) mergeOver(tx *gorm.DB, p *prepared) (*prepared, error) {
	agent, base := p.in.Agent, p.in.BaseVersion
	var latest []int
	if err := tx.Raw(`SELECT latest_version FROM prompt_agents WHERE agent = ?`+sqlstore.ForUpdate(tx), agent).Scan(&latest).Error; err != nil {
		return nil, err
	}
	if len(latest) == 0 || latest[0] == base {
		return p, nil
	}
	if base > latest[0] {
		return nil, &VersionConflict{Agent: agent, Base: base, Latest: latest[0]}
	}
	baseConfig := []byte(`{}`)
	if base > 0 {
		c, err := configAt(tx, agent, base)
		if err != nil {
			return nil, err
		}
		baseConfig = c
	}
	theirs, err := configAt(tx, agent, latest[0])
	if err != nil {
		return nil, err
	}
	merged, conflicts, err := jsonmerge.Merge(baseConfig, p.canon, theirs, jsonmerge.Options{Keys: MergeKeys})
	if err != nil {
		return nil, err
	}
	if len(conflicts) > 0 {
		return nil, &MergeConflict{Agent: agent, Base: base, Latest: latest[0], Paths: conflicts}
	}
	parse := prompt.ParseConfig
	if prompt.HasFragments(merged) {
		parse = func(raw []byte) (*prompt.Config, []byte, error) { return pinConfig(tx, raw) }
	}
	parsed, canon, err := parse(merged)
	if err != nil {
		return nil, err // the merge of two valid configs can be invalid (a variable one side removed, the other uses)
	}
	in := p.in
	in.BaseVersion = latest[0]
	mb := base
	return &prepared{in: in, parsed: parsed, canon: canon, hash: ContentHash(canon), mergeBase: &mb}, nil
}

func configAt(tx *gorm.DB, agent string, version int) ([]byte, error) {
	var configs []string
	if err := tx.Raw(`SELECT config FROM prompt_versions WHERE agent = ? AND version = ?`, agent, version).Scan(&configs).Error; err != nil {
		return nil, err
	}
	if len(configs) == 0 {
		return nil, ErrVersionNotFound
	}
	return []byte(configs[0]), nil
}
