package promptstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/ident"
	"github.com/promptd/promptd/prompt"
	"github.com/promptd/promptd/sqlstore"
)

// Version is an immutable prompt config snapshot.
type Version struct {
	Agent       string          `json:"agent"`
	Version     int             `json:"version"`
	Config      json.RawMessage `json:"config"` // canonical JSON
	ContentHash string          `json:"content_hash"`
	Message     string          `json:"message"`
	CreatedBy   string          `json:"created_by"`
	CreatedAt   time.Time       `json:"created_at"`
	// Merge is set on a version created by a three-way merge: its parents
	// are the version before it (theirs) and the author's base.
	Merge *VersionMerge `json:"merge,omitempty"`
}

// VersionMerge names a merged version's parents: BaseVersion, the version
// its author started from, and TheirsVersion, the latest version it was
// merged over (the version before it).
type VersionMerge struct {
	BaseVersion   int `json:"base_version"`
	TheirsVersion int `json:"theirs_version"`
}

// Snapshot is a version with its parsed config, as the caches hold it.
type Snapshot struct {
	*Version
	Parsed *prompt.Config
}

// MaxMessage bounds a version's message, in bytes.
const MaxMessage = 4096

// MaxVersion bounds version numbers (JSON clients read them exactly).
const MaxVersion = 1<<31 - 1

// CreateVersionInput is one version create.
type CreateVersionInput struct {
	Agent       string
	BaseVersion int
	Config      json.RawMessage
	Message     string
	// Merge: when BaseVersion is not the latest, merge Config's changes
	// from BaseVersion with those made since (three-way, by JSON path) and
	// create the merged version over the latest, or answer *MergeConflict
	// with the paths both changed; without it a stale base is
	// *VersionConflict.
	Merge bool
}

// prepared is a validated create, ready to write.
type prepared struct {
	in     CreateVersionInput
	parsed *prompt.Config
	canon  []byte
	hash   string
	// mergeBase is the author's base of a merged version (nil otherwise).
	mergeBase *int
	// needsPin: the config references fragments, pinned (and only then
	// parsed) in the transaction that writes it.
	needsPin bool
}

// pinIn pins p's fragment references within tx (p itself when it has none).
func (p *prepared) pinIn(tx *gorm.DB) (*prepared, error) {
	if !p.needsPin {
		return p, nil
	}
	parsed, canon, err := pinConfig(tx, p.canon)
	if err != nil {
		return nil, err
	}
	q := *p
	q.parsed, q.canon, q.hash, q.needsPin = parsed, canon, ContentHash(canon), false
	return &q, nil
}

func prepare(in CreateVersionInput) (*prepared, error) {
	if err := ident.Validate("agent", in.Agent); err != nil {
		return nil, invalidID(err)
	}
	if in.BaseVersion < 0 || in.BaseVersion >= MaxVersion {
		return nil, invalid(CodeInvalidField, "base_version", "base_version must be 0..%d", MaxVersion-1)
	}
	if len(in.Message) > MaxMessage {
		return nil, invalid(CodeInvalidField, "message", "message is longer than %d bytes", MaxMessage)
	}
	if prompt.HasFragments(in.Config) {
		canon, err := Canonical(in.Config)
		if err != nil {
			return nil, invalid(CodeInvalidConfig, "config", "%v", err)
		}
		return &prepared{in: in, canon: canon, needsPin: true}, nil
	}
	parsed, canon, err := prompt.ParseConfig(in.Config)
	if err != nil {
		return nil, err
	}
	return &prepared{in: in, parsed: parsed, canon: canon, hash: ContentHash(canon)}, nil
}

// CheckID validates an identifier (the HTTP contract's (api/openapi.yaml)
// rule) as a bad-input error naming field (ident.Check).
func CheckID(field, v string) error { return ident.Check(field, v) }

func invalidID(err error) error { return ident.AsInvalid(err) }

// CreateVersion creates version BaseVersion+1 of the agent. The database
// checks the base: a conditional update of the agent's latest version (or
// the agent row's primary key for the first version) plus the versions
// table's unique key, in one transaction with the audit event. The agent's
// config lock only cuts contention.
func (s *Store) CreateVersion(ctx context.Context, in CreateVersionInput, then ...sqlstore.Then[*Version]) (*Version, error) {
	p, err := prepare(in)
	if err != nil {
		return nil, err
	}
	key, _ := ConfigLock(s.o.Keys, in.Agent)
	defer s.lock(ctx, key)()
	sctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	final := p
	v, err := sqlstore.Transact(sctx, s.db, func(tx *gorm.DB) (*Version, error) {
		if in.Merge {
			m, err := s.mergeOver(tx, p)
			if err != nil {
				return nil, err
			}
			final = m
		}
		pinned, err := final.pinIn(tx)
		if err != nil {
			return nil, err
		}
		final = pinned
		return s.insertVersion(ctx, tx, final)
	}, then...)
	if err != nil {
		var vc *VersionConflict
		if errors.As(err, &vc) {
			s.o.Metrics.conflict("version")
		}
		return nil, storeErr(err)
	}
	s.snaps.put(&Snapshot{Version: v, Parsed: final.parsed})
	s.mirrorSnapshot(ctx, v)
	return v, nil
}

// CheckVersion answers what CreateVersion would, writing nothing: the
// same validation (prepare) and the same base check against the agent's
// latest version (*VersionConflict), read from SQL. The version it
// returns is the one a create would make now, without a creation time.
// A create made after it can still conflict: the check holds no lock.
func (s *Store) CheckVersion(ctx context.Context, in CreateVersionInput) (*Version, error) {
	p, err := prepare(in)
	if err != nil {
		return nil, err
	}
	sctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	db := s.db.WithContext(sctx)
	if in.Merge {
		m, err := s.mergeOver(db, p)
		if err == nil {
			m, err = m.pinIn(db)
		}
		if err != nil {
			return nil, storeErr(err)
		}
		v := &Version{Agent: in.Agent, Version: m.in.BaseVersion + 1, Config: m.canon, ContentHash: m.hash, Message: in.Message,
			CreatedBy: audit.Actor(ctx)}
		if m.mergeBase != nil {
			v.Merge = &VersionMerge{BaseVersion: *m.mergeBase, TheirsVersion: m.in.BaseVersion}
		}
		return v, nil
	}
	latest, err := latestVersion(db, in.Agent)
	if err != nil {
		return nil, err
	}
	if latest != in.BaseVersion {
		return nil, &VersionConflict{Agent: in.Agent, Base: in.BaseVersion, Latest: latest}
	}
	if p, err = p.pinIn(db); err != nil {
		return nil, storeErr(err)
	}
	return &Version{Agent: in.Agent, Version: in.BaseVersion + 1, Config: p.canon, ContentHash: p.hash,
		Message: in.Message, CreatedBy: audit.Actor(ctx)}, nil
}

// insertVersion writes one version within tx.
func (s *Store) insertVersion(ctx context.Context, tx *gorm.DB, p *prepared) (*Version, error) {
	now := s.now()
	ms := now.UnixMilli()
	agent, base := p.in.Agent, p.in.BaseVersion
	if base == 0 {
		err := tx.Exec(`INSERT INTO prompt_agents (agent, latest_version, latest_content_hash, revision, created_at_ms, updated_at_ms)
			VALUES (?, 1, ?, 1, ?, ?)`, agent, p.hash, ms, ms).Error
		if sqlstore.IsDuplicate(err) {
			return nil, conflict(tx, agent, base)
		}
		if err != nil {
			return nil, err
		}
	} else {
		res := tx.Exec(`UPDATE prompt_agents SET latest_version = ?, latest_content_hash = ?, revision = revision + 1, updated_at_ms = ?
			WHERE agent = ? AND latest_version = ?`, base+1, p.hash, ms, agent, base)
		if res.Error != nil {
			return nil, res.Error
		}
		if res.RowsAffected != 1 {
			return nil, conflict(tx, agent, base)
		}
	}
	v := &Version{Agent: agent, Version: base + 1, Config: p.canon, ContentHash: p.hash, Message: p.in.Message,
		CreatedBy: audit.Actor(ctx), CreatedAt: time.UnixMilli(ms).UTC()}
	if p.mergeBase != nil {
		v.Merge = &VersionMerge{BaseVersion: *p.mergeBase, TheirsVersion: base}
	}
	err := tx.Exec(`INSERT INTO prompt_versions (agent, version, config, content_hash, message, created_by, created_at_ms, merge_base)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, agent, v.Version, string(p.canon), p.hash, v.Message, v.CreatedBy, ms, p.mergeBase).Error
	if sqlstore.IsDuplicate(err) {
		return nil, conflict(tx, agent, base)
	}
	if err != nil {
		return nil, err
	}
	if err := recordUses(tx, agent, v.Version, p.parsed); err != nil {
		return nil, err
	}
	details := map[string]any{"version": v.Version, "content_hash": v.ContentHash, "base_version": base}
	if v.Merge != nil {
		details["merge"] = v.Merge
	}
	if err := s.audit.Append(ctx, tx, audit.Event{Action: "version.created", Agent: agent,
		Resource: fmt.Sprintf("agents/%s/versions/%d", agent, v.Version)}, details); err != nil {
		return nil, err
	}
	return v, nil
}

// latestVersion is the agent's latest version (0: no such agent). Its
// error is the database's: an outage must never read as "not found".
func latestVersion(tx *gorm.DB, agent string) (int, error) {
	var latest int
	if err := tx.Raw(`SELECT latest_version FROM prompt_agents WHERE agent = ?`, agent).Scan(&latest).Error; err != nil {
		return 0, storeErr(sqlstore.Translate(err))
	}
	return latest, nil
}

// conflict is the *VersionConflict of a create from base, naming the
// latest version read within tx.
func conflict(tx *gorm.DB, agent string, base int) error {
	latest, err := latestVersion(tx, agent)
	if err != nil {
		return err
	}
	return &VersionConflict{Agent: agent, Base: base, Latest: latest}
}

// absent answers a miss within tx: ErrAgentNotFound when the agent has
// no version at all, else err (ErrNoPointer, ErrVersionNotFound). It runs
// only on the not-found path, one primary-key read of prompt_agents in
// the transaction (or session) that missed, so the store itself says
// which of the two is missing and no caller asks again.
func absent(tx *gorm.DB, agent string, err error) error {
	latest, lerr := latestVersion(tx, agent)
	switch {
	case lerr != nil:
		return lerr
	case latest == 0:
		return ErrAgentNotFound
	}
	return err
}

// missing tells a missing version of an existing agent from a missing agent.
func missing(tx *gorm.DB, agent string) error {
	latest, err := latestVersion(tx, agent)
	switch {
	case err != nil:
		return err
	case latest == 0:
		return ErrAgentNotFound
	}
	return ErrVersionNotFound
}

type versionRow struct {
	Agent       string
	Version     int
	Config      string
	ContentHash string
	Message     string
	CreatedBy   string
	CreatedAtMs int64
	MergeBase   *int
}

func (r versionRow) version() *Version {
	v := &Version{Agent: r.Agent, Version: r.Version, Config: json.RawMessage(r.Config), ContentHash: r.ContentHash,
		Message: r.Message, CreatedBy: r.CreatedBy, CreatedAt: time.UnixMilli(r.CreatedAtMs).UTC()}
	if r.MergeBase != nil {
		v.Merge = &VersionMerge{BaseVersion: *r.MergeBase, TheirsVersion: r.Version - 1}
	}
	return v
}

// Snapshot returns a version with its parsed config: from the in-process
// cache, else from SQL (the source of truth), and only when SQL is
// unavailable from the Redis mirror. What SQL returned is mirrored.
func (s *Store) Snapshot(ctx context.Context, agent string, version int) (*Snapshot, error) {
	if snap := s.snaps.get(agent, version); snap != nil {
		s.o.Metrics.cache("snapshot", "hit")
		return snap, nil
	}
	s.o.Metrics.cache("snapshot", "miss")
	v, sqlErr := s.loadVersion(ctx, agent, version)
	if sqlErr != nil && errors.Is(sqlErr, ErrUnavailable) {
		if mv := s.mirroredSnapshot(ctx, agent, version); mv != nil {
			v, sqlErr = mv, nil
		}
	}
	if sqlErr != nil {
		return nil, sqlErr
	}
	parsed, _, err := prompt.Load(v.Config)
	if err != nil {
		return nil, fmt.Errorf("promptstore: stored config of %s v%d does not parse: %w", agent, version, err)
	}
	snap := &Snapshot{Version: v, Parsed: parsed}
	s.snaps.put(snap)
	s.mirrorSnapshot(ctx, v)
	return snap, nil
}

func (s *Store) loadVersion(ctx context.Context, agent string, version int) (*Version, error) {
	ctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	var rows []versionRow
	err := s.db.WithContext(ctx).Raw(`SELECT agent, version, config, content_hash, message, created_by, created_at_ms, merge_base
		FROM prompt_versions WHERE agent = ? AND version = ?`, agent, version).Scan(&rows).Error
	if err != nil {
		return nil, storeErr(sqlstore.Translate(err))
	}
	if len(rows) == 0 {
		return nil, missing(s.db.WithContext(ctx), agent)
	}
	return rows[0].version(), nil
}

// GetVersion returns one version.
func (s *Store) GetVersion(ctx context.Context, agent string, version int) (*Version, error) {
	if err := ident.Validate("agent", agent); err != nil {
		return nil, invalidID(err)
	}
	snap, err := s.Snapshot(ctx, agent, version)
	if err != nil {
		return nil, err
	}
	return snap.Version, nil
}

// Page asks for one page of a list: Limit items after Cursor.
type Page struct {
	Limit  int
	Cursor string
	// Agents limits ListAgents to these agents (a scoped token's) in its
	// query, before the page's limit; nil: every agent.
	Agents sqlstore.Names
}

// ListVersions lists an agent's versions, newest first. The cursor is the
// last version of the previous page.
func (s *Store) ListVersions(ctx context.Context, agent string, p Page) ([]*Version, string, error) {
	if err := ident.Validate("agent", agent); err != nil {
		return nil, "", invalidID(err)
	}
	ctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	before := MaxVersion
	if p.Cursor != "" {
		if _, err := fmt.Sscanf(p.Cursor, "%d", &before); err != nil || before < 1 {
			return nil, "", invalid(CodeInvalidField, "cursor", "bad cursor")
		}
	}
	rows, full, err := s.versionPage(ctx, agent, before, p.Limit)
	if err != nil {
		return nil, "", storeErr(sqlstore.Translate(err))
	}
	if len(rows) == 0 && p.Cursor == "" {
		if err := missing(s.db.WithContext(ctx), agent); !errors.Is(err, ErrVersionNotFound) {
			return nil, "", err
		}
	}
	next := ""
	if full {
		next = fmt.Sprint(rows[len(rows)-1].Version)
	}
	out := make([]*Version, len(rows))
	for i, r := range rows {
		out[i] = r.version()
	}
	return out, next, nil
}

// PageMaxBytes bounds the configs one page of versions carries: a page
// ends after the version that passes it (at least one version a page),
// with its cursor, whatever its limit asked for.
const PageMaxBytes = 4 << 20

// versionPage reads up to limit versions of agent below before, newest
// first, streaming the rows and stopping once their configs pass
// PageMaxBytes; full reports that more may follow.
func (s *Store) versionPage(ctx context.Context, agent string, before, limit int) ([]versionRow, bool, error) {
	rs, err := s.db.WithContext(ctx).Raw(`SELECT agent, version, config, content_hash, message, created_by, created_at_ms, merge_base
		FROM prompt_versions WHERE agent = ? AND version < ? ORDER BY version DESC LIMIT ?`, agent, before, limit+1).Rows()
	if err != nil {
		return nil, false, err
	}
	return sqlstore.ScanPage(rs, limit, PageMaxBytes, func(rs *sql.Rows) (versionRow, int, error) {
		var r versionRow
		err := rs.Scan(&r.Agent, &r.Version, &r.Config, &r.ContentHash, &r.Message, &r.CreatedBy, &r.CreatedAtMs, &r.MergeBase)
		return r, len(r.Config) + len(r.Message), err
	})
}

// Agent is an agent's summary.
type Agent struct {
	Agent             string         `json:"agent"`
	LatestVersion     int            `json:"latest_version"`
	LatestContentHash string         `json:"latest_content_hash"`
	Envs              map[string]int `json:"envs"`
}

// ListAgents lists agents by name, those in p.Agents only; the cursor is
// the last agent of the previous page.
func (s *Store) ListAgents(ctx context.Context, p Page) ([]*Agent, string, error) {
	if p.Agents.None() {
		return []*Agent{}, "", nil
	}
	where, args := `agent > ?`, []any{p.Cursor}
	if cond, a := p.Agents.Cond("agent"); cond != "" {
		where, args = where+` AND `+cond, append(args, a...)
	}
	ctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	var rows []struct {
		Agent             string
		LatestVersion     int
		LatestContentHash string
	}
	db := s.db.WithContext(ctx)
	err := db.Raw(`SELECT agent, latest_version, latest_content_hash FROM prompt_agents WHERE `+where+` ORDER BY agent LIMIT ?`,
		append(args, p.Limit+1)...).Scan(&rows).Error
	if err != nil {
		return nil, "", storeErr(sqlstore.Translate(err))
	}
	next := ""
	if len(rows) > p.Limit {
		rows = rows[:p.Limit]
		next = rows[len(rows)-1].Agent
	}
	out := make([]*Agent, len(rows))
	byName := map[string]*Agent{}
	names := make([]string, len(rows))
	for i, r := range rows {
		out[i] = &Agent{Agent: r.Agent, LatestVersion: r.LatestVersion, LatestContentHash: r.LatestContentHash, Envs: map[string]int{}}
		byName[r.Agent] = out[i]
		names[i] = r.Agent
	}
	if len(names) > 0 {
		var envs []struct {
			Agent, Env string
			Version    int
		}
		if err := db.Raw(`SELECT agent, env, version FROM prompt_env_pointers WHERE agent IN ?`, names).Scan(&envs).Error; err != nil {
			return nil, "", storeErr(sqlstore.Translate(err))
		}
		for _, e := range envs {
			byName[e.Agent].Envs[e.Env] = e.Version
		}
	}
	return out, next, nil
}
