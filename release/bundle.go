package release

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/bundle"
	"github.com/promptd/promptd/ident"
	"github.com/promptd/promptd/problem"
	"github.com/promptd/promptd/sqlstore"
)

// A Bundle is everything an SDK needs to resolve locally, read in one
// snapshot: for each agent the env pointers (version, revision,
// revocations, active release with its hashed overrides) and the configs
// of every version a pointer or an active release names. Cursor is the
// change-feed position it reflects.
type Bundle struct {
	// Format is the bundle's format number (bundle.Format): evaluators
	// that do not know it ask the server. It is part of the ETag's digest.
	Format int                     `json:"format"`
	Cursor string                  `json:"cursor"`
	Agents map[string]*BundleAgent `json:"agents"`
	// ETag names this bundle's content (a digest of everything in it but
	// the configs, which the content hashes stand for), computed before
	// any config is read.
	ETag string `json:"-"`
	// NotModified: the query's IfNoneMatch matched ETag, and no config was
	// read (Versions hold their content hashes only).
	NotModified bool `json:"-"`
}

// BundleAgent is one agent of a bundle. Versions are keyed by number
// (JSON object keys, sorted as strings by encoding/json).
type BundleAgent struct {
	Versions map[int]BundleVersion `json:"versions"`
	Envs     map[string]*BundleEnv `json:"envs"`
}

// BundleVersion is an immutable version's config and its content hash.
type BundleVersion struct {
	ContentHash string          `json:"content_hash"`
	Config      json.RawMessage `json:"config"`
}

// BundleEnv is an env pointer as a bundle shows it.
type BundleEnv struct {
	Version  int            `json:"version"`
	Revision int64          `json:"revision"`
	Revoked  []int          `json:"revoked"`
	Release  *BundleRelease `json:"release"`
}

// BundleRelease is an env's active release, with what bucketing and the
// override check need.
type BundleRelease struct {
	ID               string    `json:"id"`
	State            State     `json:"state"`
	Revision         int64     `json:"revision"`
	BaselineVersion  int       `json:"baseline_version"`
	CandidateVersion int       `json:"candidate_version"`
	BasisPoints      int       `json:"basis_points"`
	Stickiness       string    `json:"stickiness"`
	Overrides        Overrides `json:"overrides"`
}

// BundleQuery selects what a bundle holds. Nil Agents or Envs: all of
// them; names that do not exist are simply absent from the bundle.
type BundleQuery struct {
	Agents []string
	Envs   []string
	// MaxConfigBytes bounds the sum of the configs' sizes read (the answer
	// is a little larger); past it Bundle stops with *BundleTooLarge.
	// Zero: no bound.
	MaxConfigBytes int64
	// Visible, when set, is the token's scope: an (agent, env) it rejects
	// is left out (env "" asks about the agent as a whole). The access
	// package's scopes plug in here; nil shows everything.
	Visible func(agent, env string) bool
	// IfNoneMatch, when set, is asked with the bundle's ETag before any
	// config is read: true (the client has this bundle) answers
	// NotModified without reading them, so a conditional request costs
	// the small rows only.
	IfNoneMatch func(etag string) bool
}

// MaxBundleNames is how many agents or envs a bundle query may name.
const MaxBundleNames = 1000

// BundleTooLarge: the bundle would exceed Limit bytes.
type BundleTooLarge struct{ Limit int64 }

func (e *BundleTooLarge) Error() string {
	return fmt.Sprintf("release: the bundle is larger than %d bytes", e.Limit)
}

// Problem is 422 bundle_too_large with the limit.
func (e *BundleTooLarge) Problem() *problem.Problem {
	return (&problem.Problem{Code: problem.BundleTooLarge,
		Detail: fmt.Sprintf("the bundle is larger than %d bytes; ask for fewer agents or envs", e.Limit)}).With("limit", e.Limit)
}

// Bundle reads a bundle in one transaction, REPEATABLE READ on MySQL (a
// consistent snapshot from its first read; SQLite's read transaction is one
// snapshot too), one query per table whatever the number of agents.
//
// Cursor is the highest seq stamped in that same snapshot. An event is
// stamped only after the transaction that wrote it (and its change)
// committed, by a later transaction, so every event at or below the cursor
// describes a change the snapshot contains. Events above it may be
// contained too (committed, not yet stamped): an SDK that subscribes with
// since=cursor sees them again and applies only revisions newer than its
// own, so nothing is missed and nothing goes backwards.
func (s *Service) Bundle(ctx context.Context, q BundleQuery) (*Bundle, error) {
	for _, l := range []struct {
		field string
		names []string
	}{{"agents", q.Agents}, {"envs", q.Envs}} {
		if len(l.names) > MaxBundleNames {
			return nil, invalidf(CodeInvalidField, l.field, "at most %d names", MaxBundleNames)
		}
		for _, n := range l.names {
			if err := ident.Validate(l.field, n); err != nil {
				return nil, err
			}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.SQLTimeout)
	defer cancel()
	b, err := sqlstore.TransactIsolated(ctx, s.db, sql.LevelRepeatableRead,
		func(tx *gorm.DB) (*Bundle, error) { return readBundle(ctx, tx, q) })
	return b, storeErr(err)
}

// where filters a query on agent and env by q.
func (q BundleQuery) where(envs bool) (string, []any) {
	w, args := " WHERE 1 = 1", []any{}
	if q.Agents != nil {
		w, args = w+" AND agent IN ?", append(args, nonEmpty(q.Agents))
	}
	if envs && q.Envs != nil {
		w, args = w+" AND env IN ?", append(args, nonEmpty(q.Envs))
	}
	return w, args
}

// nonEmpty keeps "IN ?" valid for an empty list (no name matches "").
func nonEmpty(names []string) []string {
	if len(names) == 0 {
		return []string{""}
	}
	return names
}

func readBundle(ctx context.Context, tx *gorm.DB, q BundleQuery) (*Bundle, error) {
	// The snapshot starts at this first read, the cursor's.
	head, err := audit.Head(ctx, tx)
	if err != nil {
		return nil, err
	}
	b := &Bundle{Format: bundle.Format, Cursor: fmt.Sprint(head), Agents: map[string]*BundleAgent{}}
	visible := func(agent, env string) bool { return q.Visible == nil || q.Visible(agent, env) }

	w, args := q.where(false)
	var agents []string
	if err := tx.Raw(`SELECT agent FROM prompt_agents`+w, args...).Scan(&agents).Error; err != nil {
		return nil, err
	}
	for _, a := range agents {
		if visible(a, "") {
			b.Agents[a] = &BundleAgent{Versions: map[int]BundleVersion{}, Envs: map[string]*BundleEnv{}}
		}
	}

	w, args = q.where(true)
	var ptrs []struct {
		Agent, Env      string
		Version         int
		Revision        int64
		ActiveReleaseID *string
	}
	if err := tx.Raw(`SELECT agent, env, version, revision, active_release_id FROM prompt_env_pointers`+w, args...).
		Scan(&ptrs).Error; err != nil {
		return nil, err
	}
	type envKey struct{ agent, env string }
	envs := map[envKey]*BundleEnv{}
	var releaseIDs []string
	for _, p := range ptrs {
		ag := b.Agents[p.Agent]
		if ag == nil || !visible(p.Agent, p.Env) {
			continue
		}
		e := &BundleEnv{Version: p.Version, Revision: p.Revision, Revoked: []int{}}
		ag.Envs[p.Env], envs[envKey{p.Agent, p.Env}] = e, e
		if p.ActiveReleaseID != nil && *p.ActiveReleaseID != "" {
			releaseIDs = append(releaseIDs, *p.ActiveReleaseID)
		}
	}

	var revoked []struct {
		Agent, Env string
		Version    int
	}
	if err := tx.Raw(`SELECT agent, env, version FROM prompt_revocations`+w+` ORDER BY version`, args...).
		Scan(&revoked).Error; err != nil {
		return nil, err
	}
	for _, r := range revoked {
		if e := envs[envKey{r.Agent, r.Env}]; e != nil {
			e.Revoked = append(e.Revoked, r.Version)
		}
	}

	if len(releaseIDs) > 0 {
		var rows []releaseRow
		if err := tx.Raw(`SELECT `+releaseCols+` FROM releases WHERE id IN ?`, releaseIDs).Scan(&rows).Error; err != nil {
			return nil, err
		}
		rels := make([]*Release, len(rows))
		for i := range rows {
			rels[i] = rows[i].release()
		}
		if err := readOverrides(tx, rels...); err != nil {
			return nil, err
		}
		for _, r := range rels {
			e := envs[envKey{r.Agent, r.Env}]
			if e == nil || !r.State.Active() {
				continue
			}
			e.Release = &BundleRelease{ID: r.ID, State: r.State, Revision: r.Revision, BaselineVersion: r.BaselineVersion,
				CandidateVersion: r.CandidateVersion, BasisPoints: r.BasisPoints, Stickiness: r.Stickiness, Overrides: r.Overrides}
		}
	}
	pairs, err := readBundleHashes(tx, b)
	if err != nil {
		return nil, err
	}
	digest, err := json.Marshal(b) // configs not read yet: their hashes stand for them
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(digest)
	b.ETag = `"` + hex.EncodeToString(sum[:16]) + `"`
	if q.IfNoneMatch != nil && q.IfNoneMatch(b.ETag) {
		b.NotModified = true
		return b, nil
	}
	return b, readBundleConfigs(tx, b, pairs, q.MaxConfigBytes)
}

// readBundleHashes reads, in one query, the content hashes of every
// version a pointer or an active release of b names, and returns those
// (agent, version) pairs.
func readBundleHashes(tx *gorm.DB, b *Bundle) ([][]any, error) {
	type av struct {
		agent   string
		version int
	}
	seen := map[av]bool{}
	var pairs [][]any
	add := func(agent string, v int) {
		if k := (av{agent, v}); !seen[k] {
			seen[k] = true
			pairs = append(pairs, []any{agent, v})
		}
	}
	names := make([]string, 0, len(b.Agents))
	for a := range b.Agents {
		names = append(names, a)
	}
	slices.Sort(names)
	for _, a := range names {
		for _, e := range b.Agents[a].Envs {
			add(a, e.Version)
			if e.Release != nil {
				add(a, e.Release.BaselineVersion)
				add(a, e.Release.CandidateVersion)
			}
		}
	}
	if len(pairs) == 0 {
		return nil, nil
	}
	var rows []struct {
		Agent       string
		Version     int
		ContentHash string
	}
	if err := tx.Raw(`SELECT agent, version, content_hash FROM prompt_versions WHERE (agent, version) IN ?`, pairs).Scan(&rows).Error; err != nil {
		return nil, err
	}
	for _, r := range rows {
		b.Agents[r.Agent].Versions[r.Version] = BundleVersion{ContentHash: r.ContentHash}
	}
	return pairs, nil
}

// readBundleConfigs reads the configs of pairs into b, stopping past
// limit bytes (*BundleTooLarge) so that no more is held than the answer
// may carry.
func readBundleConfigs(tx *gorm.DB, b *Bundle, pairs [][]any, limit int64) error {
	if len(pairs) == 0 {
		return nil
	}
	rows, err := tx.Raw(`SELECT agent, version, config FROM prompt_versions WHERE (agent, version) IN ?`, pairs).Rows()
	if err != nil {
		return err
	}
	defer rows.Close()
	var total int64
	for rows.Next() {
		var (
			agent, config string
			version       int
		)
		if err := rows.Scan(&agent, &version, &config); err != nil {
			return err
		}
		if total += int64(len(config)); limit > 0 && total > limit {
			return &BundleTooLarge{Limit: limit}
		}
		v := b.Agents[agent].Versions[version]
		v.Config = json.RawMessage(config)
		b.Agents[agent].Versions[version] = v
	}
	return rows.Err()
}
