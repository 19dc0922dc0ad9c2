package promptstore

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"gorm.io/gorm"

	"github.com/promptd/promptd/ident"
	"github.com/promptd/promptd/prompt"
	"github.com/promptd/promptd/sqlstore"
)

// UsedBy lists the agent versions that pin a fragment version (directly
// or through another fragment), by agent then version, with the envs
// whose pointers name each; the cursor is "<agent>/<version>" of the last
// one of the previous page.
func (s *Store) UsedBy(ctx context.Context, name string, version int, p Page) ([]*FragmentUse, string, error) {
	if _, err := s.GetFragmentVersion(ctx, name, version); err != nil {
		return nil, "", err
	}
	afterAgent, afterVersion := "", 0
	if p.Cursor != "" {
		a, v, ok := strings.Cut(p.Cursor, "/")
		n, err := strconv.Atoi(v)
		if !ok || err != nil || ident.Validate("agent", a) != nil {
			return nil, "", invalid(CodeInvalidField, "cursor", "bad cursor")
		}
		afterAgent, afterVersion = a, n
	}
	sctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	db := s.db.WithContext(sctx)
	var rows []struct {
		Agent        string
		AgentVersion int
	}
	if err := db.Raw(`SELECT agent, agent_version FROM prompt_fragment_uses WHERE name = ? AND version = ?
		AND (agent > ? OR (agent = ? AND agent_version > ?)) ORDER BY agent, agent_version LIMIT ?`,
		name, version, afterAgent, afterAgent, afterVersion, p.Limit+1).Scan(&rows).Error; err != nil {
		return nil, "", storeErr(sqlstore.Translate(err))
	}
	next := ""
	if len(rows) > p.Limit {
		rows = rows[:p.Limit]
		next = fmt.Sprintf("%s/%d", rows[len(rows)-1].Agent, rows[len(rows)-1].AgentVersion)
	}
	out := make([]*FragmentUse, len(rows))
	agents := []string{}
	for i, r := range rows {
		out[i] = &FragmentUse{Agent: r.Agent, Version: r.AgentVersion, Envs: []string{}}
		agents = append(agents, r.Agent)
	}
	if len(agents) > 0 {
		var envs []struct {
			Agent, Env string
			Version    int
		}
		if err := db.Raw(`SELECT agent, env, version FROM prompt_env_pointers WHERE agent IN ? ORDER BY env`, agents).Scan(&envs).Error; err != nil {
			return nil, "", storeErr(sqlstore.Translate(err))
		}
		for _, u := range out {
			for _, e := range envs {
				if e.Agent == u.Agent && e.Version == u.Version {
					u.Envs = append(u.Envs, e.Env)
				}
			}
		}
	}
	return out, next, nil
}

// pinned lists every fragment version a config pins, through nested
// fragments too, each once.
func pinnedFragments(frags map[string]prompt.FragmentRef, seen map[[2]string]bool, out *[][2]string) {
	for _, f := range frags {
		k := [2]string{f.Name, strconv.Itoa(f.Version)}
		if !seen[k] {
			seen[k] = true
			*out = append(*out, k)
		}
		pinnedFragments(f.Fragments, seen, out)
	}
}

// recordUses writes the used-by rows of a new agent version within tx.
func recordUses(tx *gorm.DB, agent string, version int, cfg *prompt.Config) error {
	if cfg == nil || len(cfg.Fragments) == 0 {
		return nil
	}
	var uses [][2]string
	pinnedFragments(cfg.Fragments, map[[2]string]bool{}, &uses)
	for _, u := range uses {
		if err := tx.Exec(`INSERT INTO prompt_fragment_uses (name, version, agent, agent_version) VALUES (?, ?, ?, ?)`,
			u[0], u[1], agent, version).Error; err != nil {
			return err
		}
	}
	return nil
}

// pinConfig pins a config's fragment references within tx and validates
// the result as a version create does.
func pinConfig(tx *gorm.DB, raw []byte) (*prompt.Config, []byte, error) {
	pinned, err := prompt.PinConfig(raw, fragmentSource(tx))
	if err != nil {
		return nil, nil, err
	}
	return prompt.ParseConfig(pinned)
}

// Proposal is an agent whose next version would pick up a new version of
// a fragment: its latest version names the fragment by an env.
type Proposal struct {
	Agent   string
	Version int // the agent's latest version
	Alias   string
	Env     string
}

// ProposeFragment lists the agents whose latest version references the
// fragment (directly) through an env pointer, by agent: a new version
// put on that env reaches each at its next publish. It writes nothing.
func (s *Store) ProposeFragment(ctx context.Context, name string) ([]Proposal, error) {
	sctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	db := s.db.WithContext(sctx)
	var rows []struct {
		Agent   string
		Version int
		Config  string
	}
	if err := db.Raw(`SELECT v.agent AS agent, v.version AS version, v.config AS config FROM prompt_fragment_uses u
		JOIN prompt_agents a ON a.agent = u.agent AND a.latest_version = u.agent_version
		JOIN prompt_versions v ON v.agent = u.agent AND v.version = u.agent_version
		WHERE u.name = ? ORDER BY v.agent`, name).Scan(&rows).Error; err != nil {
		return nil, storeErr(sqlstore.Translate(err))
	}
	out := []Proposal{}
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r.Agent] {
			continue
		}
		seen[r.Agent] = true
		cfg, _, err := prompt.Load([]byte(r.Config))
		if err != nil {
			continue
		}
		for _, alias := range sortedRefAliases(cfg.Fragments) {
			if f := cfg.Fragments[alias]; f.Name == name && f.Env != "" {
				out = append(out, Proposal{Agent: r.Agent, Version: r.Version, Alias: alias, Env: f.Env})
			}
		}
	}
	return out, nil
}

func sortedRefAliases(m map[string]prompt.FragmentRef) []string {
	out := make([]string, 0, len(m))
	for a := range m {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}
