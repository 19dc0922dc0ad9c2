package promptstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/ident"
	"github.com/promptd/promptd/problem"
	"github.com/promptd/promptd/prompt"
	"github.com/promptd/promptd/sqlstore"
)

// Fragments live in the prompt store, not a package of their own: an
// agent version that pins a fragment reads the fragment versions and env
// pointers in the transaction that writes the version (and records the
// pin for used-by), so both sit behind one database handle and one
// transaction boundary.

// FragmentVersion is an immutable fragment version.
type FragmentVersion struct {
	Name string `json:"name"`
	// Version and ContentHash: the content's hash is "sha256:" + hex of
	// Body, its canonical JSON.
	Version     int             `json:"version"`
	Body        json.RawMessage `json:"body"` // {text} or {messages}, variables, fragments
	ContentHash string          `json:"content_hash"`
	Message     string          `json:"message"`
	CreatedBy   string          `json:"created_by"`
	CreatedAt   time.Time       `json:"created_at"`
}

// FragmentSummary is one fragment of the list.
type FragmentSummary struct {
	Name              string         `json:"name"`
	LatestVersion     int            `json:"latest_version"`
	LatestContentHash string         `json:"latest_content_hash"`
	Envs              map[string]int `json:"envs"`
}

// FragmentEnv is a fragment's env pointer.
type FragmentEnv struct {
	Name      string    `json:"name"`
	Env       string    `json:"env"`
	Version   int       `json:"version"`
	Revision  int64     `json:"revision"`
	UpdatedAt time.Time `json:"updated_at"`
	UpdatedBy string    `json:"updated_by"`
}

// FragmentUse is an agent version that pins a fragment version (directly
// or through another fragment), with the envs whose pointers name it.
type FragmentUse struct {
	Agent   string   `json:"agent"`
	Version int      `json:"version"`
	Envs    []string `json:"envs"`
}

// ErrFragmentNotFound: no such fragment, version or env pointer.
var ErrFragmentNotFound = problem.New(problem.NotFound, "promptstore: fragment not found", "no such fragment, fragment version or fragment env pointer")

// FragmentConflict: the fragment's latest version is not the base.
type FragmentConflict struct {
	Name         string
	Base, Latest int
}

func (e *FragmentConflict) Error() string {
	return fmt.Sprintf("promptstore: fragment %s: base version %d is not the latest (%d)", e.Name, e.Base, e.Latest)
}

// Problem is 409 version_conflict with the latest version.
func (e *FragmentConflict) Problem() *problem.Problem {
	return (&problem.Problem{Code: problem.VersionConflict, Detail: fmt.Sprintf(
		"base_version %d is not the latest version of fragment %s (%d)", e.Base, e.Name, e.Latest)}).With("latest_version", e.Latest)
}

// fragmentMigration is schema version 3: fragments, their versions, env
// pointers, and the pins agent versions hold (used-by).
func fragmentMigration() sqlstore.Migration {
	return sqlstore.Migration{Component: "promptstore", Version: 3, Name: "fragments: versions, env pointers, uses", Up: func(tx *gorm.DB) error {
		d := sqlstore.Dialect(tx)
		id := sqlstore.IDColumnType(d)
		for _, t := range []sqlstore.Table{{
			Name: "prompt_fragments",
			Columns: []string{"name " + id + " NOT NULL", "latest_version BIGINT NOT NULL", "latest_content_hash VARCHAR(80) NOT NULL",
				"created_at_ms BIGINT NOT NULL", "updated_at_ms BIGINT NOT NULL"},
			Primary: []string{"name"},
		}, {
			Name: "prompt_fragment_versions",
			Columns: []string{"name " + id + " NOT NULL", "version BIGINT NOT NULL", "body " + sqlstore.LongText(d) + " NOT NULL",
				"content_hash VARCHAR(80) NOT NULL", "message TEXT NOT NULL", "created_by VARCHAR(256) NOT NULL", "created_at_ms BIGINT NOT NULL"},
			Primary: []string{"name", "version"},
		}, {
			Name: "prompt_fragment_envs",
			Columns: []string{"name " + id + " NOT NULL", "env " + id + " NOT NULL", "version BIGINT NOT NULL", "revision BIGINT NOT NULL",
				"updated_at_ms BIGINT NOT NULL", "updated_by VARCHAR(256) NOT NULL"},
			Primary: []string{"name", "env"},
		}, {
			Name: "prompt_fragment_uses",
			Columns: []string{"name " + id + " NOT NULL", "version BIGINT NOT NULL", "agent " + id + " NOT NULL",
				"agent_version BIGINT NOT NULL"},
			Primary: []string{"name", "version", "agent", "agent_version"},
		}} {
			if err := sqlstore.CreateTable(tx, t); err != nil {
				return err
			}
		}
		return nil
	}}
}

// CreateFragmentInput is one fragment version create: Body is the
// content ({"text"} or {"messages"}, "variables", "fragments").
type CreateFragmentInput struct {
	Name        string
	BaseVersion int
	Body        json.RawMessage
	Message     string
}

// fragmentSource reads fragment versions and env pointers within tx.
func fragmentSource(tx *gorm.DB) prompt.FragmentSource {
	return func(name string, version int, env string) (*prompt.FragmentVersion, error) {
		if version == 0 {
			var vs []int
			if err := tx.Raw(`SELECT version FROM prompt_fragment_envs WHERE name = ? AND env = ?`, name, env).Scan(&vs).Error; err != nil {
				return nil, storeErr(sqlstore.Translate(err))
			}
			if len(vs) == 0 {
				return nil, nil
			}
			version = vs[0]
		}
		v, err := readFragmentVersion(tx, name, version)
		if errors.Is(err, ErrFragmentNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return &prompt.FragmentVersion{Name: v.Name, Version: v.Version, ContentHash: v.ContentHash, Body: v.Body}, nil
	}
}

func readFragmentVersion(db *gorm.DB, name string, version int) (*FragmentVersion, error) {
	var rows []struct {
		Name, Body, ContentHash, Message, CreatedBy string
		Version                                     int
		CreatedAtMs                                 int64
	}
	if err := db.Raw(`SELECT name, version, body, content_hash, message, created_by, created_at_ms FROM prompt_fragment_versions
		WHERE name = ? AND version = ?`, name, version).Scan(&rows).Error; err != nil {
		return nil, storeErr(sqlstore.Translate(err))
	}
	if len(rows) == 0 {
		return nil, ErrFragmentNotFound
	}
	r := rows[0]
	return &FragmentVersion{Name: r.Name, Version: r.Version, Body: json.RawMessage(r.Body), ContentHash: r.ContentHash, Message: r.Message,
		CreatedBy: r.CreatedBy, CreatedAt: time.UnixMilli(r.CreatedAtMs).UTC()}, nil
}

func checkFragmentInput(in CreateFragmentInput) error {
	if err := ident.Validate("name", in.Name); err != nil {
		return invalidID(err)
	}
	if in.BaseVersion < 0 || in.BaseVersion >= MaxVersion {
		return invalid(CodeInvalidField, "base_version", "base_version must be 0..%d", MaxVersion-1)
	}
	if len(in.Message) > MaxMessage {
		return invalid(CodeInvalidField, "message", "message is longer than %d bytes", MaxMessage)
	}
	return nil
}

// CreateFragmentVersion creates version BaseVersion+1 of a fragment, its
// references pinned as a config's are, in one transaction with its audit
// event (fragment.version.created). A stale base is *FragmentConflict.
func (s *Store) CreateFragmentVersion(ctx context.Context, in CreateFragmentInput, then ...sqlstore.Then[*FragmentVersion]) (*FragmentVersion, error) {
	if err := checkFragmentInput(in); err != nil {
		return nil, err
	}
	sctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	v, err := sqlstore.Transact(sctx, s.db, func(tx *gorm.DB) (*FragmentVersion, error) {
		body, hash, err := prepareFragment(tx, in)
		if err != nil {
			return nil, err
		}
		return s.insertFragmentVersion(ctx, tx, in, body, hash)
	}, then...)
	if err != nil {
		return nil, storeErr(err)
	}
	return v, nil
}

func prepareFragment(tx *gorm.DB, in CreateFragmentInput) ([]byte, string, error) {
	pinned, err := prompt.PinFragment(in.Body, in.Name, fragmentSource(tx))
	if err != nil {
		return nil, "", err
	}
	_, canon, err := prompt.ParseFragment(pinned)
	if err != nil {
		return nil, "", err
	}
	return canon, ContentHash(canon), nil
}

// CheckFragmentVersion answers what CreateFragmentVersion would, writing
// nothing.
func (s *Store) CheckFragmentVersion(ctx context.Context, in CreateFragmentInput) (*FragmentVersion, error) {
	if err := checkFragmentInput(in); err != nil {
		return nil, err
	}
	sctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	db := s.db.WithContext(sctx)
	body, hash, err := prepareFragment(db, in)
	if err != nil {
		return nil, storeErr(err)
	}
	latest, err := latestFragment(db, in.Name)
	if err != nil {
		return nil, err
	}
	if latest != in.BaseVersion {
		return nil, &FragmentConflict{Name: in.Name, Base: in.BaseVersion, Latest: latest}
	}
	return &FragmentVersion{Name: in.Name, Version: in.BaseVersion + 1, Body: body, ContentHash: hash, Message: in.Message,
		CreatedBy: audit.Actor(ctx)}, nil
}

func latestFragment(db *gorm.DB, name string) (int, error) {
	var latest int
	if err := db.Raw(`SELECT latest_version FROM prompt_fragments WHERE name = ?`, name).Scan(&latest).Error; err != nil {
		return 0, storeErr(sqlstore.Translate(err))
	}
	return latest, nil
}

func (s *Store) insertFragmentVersion(ctx context.Context, tx *gorm.DB, in CreateFragmentInput, body []byte, hash string) (*FragmentVersion, error) {
	ms := s.now().UnixMilli()
	stale := func() error {
		latest, err := latestFragment(tx, in.Name)
		if err != nil {
			return err
		}
		return &FragmentConflict{Name: in.Name, Base: in.BaseVersion, Latest: latest}
	}
	if in.BaseVersion == 0 {
		err := tx.Exec(`INSERT INTO prompt_fragments (name, latest_version, latest_content_hash, created_at_ms, updated_at_ms) VALUES (?, 1, ?, ?, ?)`,
			in.Name, hash, ms, ms).Error
		if sqlstore.IsDuplicate(err) {
			return nil, stale()
		}
		if err != nil {
			return nil, err
		}
	} else {
		res := tx.Exec(`UPDATE prompt_fragments SET latest_version = ?, latest_content_hash = ?, updated_at_ms = ? WHERE name = ? AND latest_version = ?`,
			in.BaseVersion+1, hash, ms, in.Name, in.BaseVersion)
		if res.Error != nil {
			return nil, res.Error
		}
		if res.RowsAffected != 1 {
			return nil, stale()
		}
	}
	v := &FragmentVersion{Name: in.Name, Version: in.BaseVersion + 1, Body: body, ContentHash: hash, Message: in.Message,
		CreatedBy: audit.Actor(ctx), CreatedAt: time.UnixMilli(ms).UTC()}
	err := tx.Exec(`INSERT INTO prompt_fragment_versions (name, version, body, content_hash, message, created_by, created_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		v.Name, v.Version, string(body), hash, v.Message, v.CreatedBy, ms).Error
	if sqlstore.IsDuplicate(err) {
		return nil, stale()
	}
	if err != nil {
		return nil, err
	}
	if err := s.audit.Append(ctx, tx, audit.Event{Action: "fragment.version.created",
		Resource: fmt.Sprintf("fragments/%s/versions/%d", v.Name, v.Version)},
		map[string]any{"version": v.Version, "content_hash": hash, "base_version": in.BaseVersion}); err != nil {
		return nil, err
	}
	return v, nil
}

// GetFragmentVersion returns one fragment version.
func (s *Store) GetFragmentVersion(ctx context.Context, name string, version int) (*FragmentVersion, error) {
	if err := ident.Validate("name", name); err != nil {
		return nil, invalidID(err)
	}
	sctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	return readFragmentVersion(s.db.WithContext(sctx), name, version)
}

// ListFragments lists fragments by name after p.Cursor.
func (s *Store) ListFragments(ctx context.Context, p Page) ([]*FragmentSummary, string, error) {
	sctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	db := s.db.WithContext(sctx)
	var rows []struct {
		Name              string
		LatestVersion     int
		LatestContentHash string
	}
	if err := db.Raw(`SELECT name, latest_version, latest_content_hash FROM prompt_fragments WHERE name > ? ORDER BY name LIMIT ?`,
		p.Cursor, p.Limit+1).Scan(&rows).Error; err != nil {
		return nil, "", storeErr(sqlstore.Translate(err))
	}
	next := ""
	if len(rows) > p.Limit {
		rows = rows[:p.Limit]
		next = rows[len(rows)-1].Name
	}
	out := make([]*FragmentSummary, len(rows))
	byName := map[string]*FragmentSummary{}
	names := make([]string, len(rows))
	for i, r := range rows {
		out[i] = &FragmentSummary{Name: r.Name, LatestVersion: r.LatestVersion, LatestContentHash: r.LatestContentHash, Envs: map[string]int{}}
		byName[r.Name], names[i] = out[i], r.Name
	}
	if len(names) > 0 {
		var envs []struct {
			Name, Env string
			Version   int
		}
		if err := db.Raw(`SELECT name, env, version FROM prompt_fragment_envs WHERE name IN ?`, names).Scan(&envs).Error; err != nil {
			return nil, "", storeErr(sqlstore.Translate(err))
		}
		for _, e := range envs {
			byName[e.Name].Envs[e.Env] = e.Version
		}
	}
	return out, next, nil
}

// ListFragmentVersions lists a fragment's versions, newest first; the
// cursor is the last version of the previous page.
func (s *Store) ListFragmentVersions(ctx context.Context, name string, p Page) ([]*FragmentVersion, string, error) {
	if err := ident.Validate("name", name); err != nil {
		return nil, "", invalidID(err)
	}
	before := MaxVersion
	if p.Cursor != "" {
		n, err := strconv.Atoi(p.Cursor)
		if err != nil || n < 1 {
			return nil, "", invalid(CodeInvalidField, "cursor", "bad cursor")
		}
		before = n
	}
	sctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	db := s.db.WithContext(sctx)
	var rows []struct {
		Name, Body, ContentHash, Message, CreatedBy string
		Version                                     int
		CreatedAtMs                                 int64
	}
	if err := db.Raw(`SELECT name, version, body, content_hash, message, created_by, created_at_ms FROM prompt_fragment_versions
		WHERE name = ? AND version < ? ORDER BY version DESC LIMIT ?`, name, before, p.Limit+1).Scan(&rows).Error; err != nil {
		return nil, "", storeErr(sqlstore.Translate(err))
	}
	if len(rows) == 0 && p.Cursor == "" {
		return nil, "", ErrFragmentNotFound
	}
	next := ""
	if len(rows) > p.Limit {
		rows = rows[:p.Limit]
		next = strconv.Itoa(rows[len(rows)-1].Version)
	}
	out := make([]*FragmentVersion, len(rows))
	for i, r := range rows {
		out[i] = &FragmentVersion{Name: r.Name, Version: r.Version, Body: json.RawMessage(r.Body), ContentHash: r.ContentHash, Message: r.Message,
			CreatedBy: r.CreatedBy, CreatedAt: time.UnixMilli(r.CreatedAtMs).UTC()}
	}
	return out, next, nil
}

// SetFragmentEnvInput moves a fragment's env pointer: ExpectedRevision 0
// creates it.
type SetFragmentEnvInput struct {
	Name, Env        string
	Version          int
	ExpectedRevision int64
}

// SetFragmentEnv moves (or creates) a fragment's env pointer under its
// revision, in one transaction with its audit event (fragment.env.moved).
// Agent versions already published keep what they pinned: only the next
// publish that names the env resolves it anew.
func (s *Store) SetFragmentEnv(ctx context.Context, in SetFragmentEnvInput, then ...sqlstore.Then[*FragmentEnv]) (*FragmentEnv, error) {
	if err := ident.Validate("name", in.Name); err != nil {
		return nil, invalidID(err)
	}
	if err := ident.Validate("env", in.Env); err != nil {
		return nil, invalidID(err)
	}
	if in.Version < 1 || in.Version >= MaxVersion {
		return nil, invalid(CodeInvalidField, "version", "version must be 1..%d", MaxVersion-1)
	}
	if in.ExpectedRevision < 0 {
		return nil, invalid(CodeInvalidField, "expected_revision", "expected_revision is 0 (create) or the current revision")
	}
	sctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	out, err := sqlstore.Transact(sctx, s.db, func(tx *gorm.DB) (*FragmentEnv, error) {
		if _, err := readFragmentVersion(tx, in.Name, in.Version); err != nil {
			return nil, err
		}
		cur, err := readFragmentEnv(tx, in.Name, in.Env)
		if err != nil && !errors.Is(err, ErrFragmentNotFound) {
			return nil, err
		}
		ms := s.now().UnixMilli()
		actor := audit.Actor(ctx)
		from := 0
		switch {
		case cur == nil && in.ExpectedRevision != 0:
			return nil, &RevisionConflict{Expected: in.ExpectedRevision, Current: 0}
		case cur == nil:
			err := tx.Exec(`INSERT INTO prompt_fragment_envs (name, env, version, revision, updated_at_ms, updated_by) VALUES (?, ?, ?, 1, ?, ?)`,
				in.Name, in.Env, in.Version, ms, actor).Error
			if sqlstore.IsDuplicate(err) {
				return nil, &RevisionConflict{Expected: 0, Current: 1}
			}
			if err != nil {
				return nil, err
			}
		default:
			from = cur.Version
			res := tx.Exec(`UPDATE prompt_fragment_envs SET version = ?, revision = revision + 1, updated_at_ms = ?, updated_by = ?
				WHERE name = ? AND env = ? AND revision = ?`, in.Version, ms, actor, in.Name, in.Env, in.ExpectedRevision)
			if res.Error != nil {
				return nil, res.Error
			}
			if res.RowsAffected != 1 {
				return nil, &RevisionConflict{Expected: in.ExpectedRevision, Current: cur.Revision}
			}
		}
		e, err := readFragmentEnv(tx, in.Name, in.Env)
		if err != nil {
			return nil, err
		}
		if err := s.audit.Append(ctx, tx, audit.Event{Action: "fragment.env.moved", Env: in.Env,
			Resource: fmt.Sprintf("fragments/%s/envs/%s", in.Name, in.Env)},
			map[string]any{"from_version": from, "to_version": in.Version, "revision": e.Revision}); err != nil {
			return nil, err
		}
		return e, nil
	}, then...)
	if err != nil {
		return nil, storeErr(err)
	}
	return out, nil
}

func readFragmentEnv(db *gorm.DB, name, env string) (*FragmentEnv, error) {
	var rows []struct {
		Name, Env, UpdatedBy string
		Version              int
		Revision             int64
		UpdatedAtMs          int64
	}
	if err := db.Raw(`SELECT name, env, version, revision, updated_at_ms, updated_by FROM prompt_fragment_envs WHERE name = ? AND env = ?`,
		name, env).Scan(&rows).Error; err != nil {
		return nil, storeErr(sqlstore.Translate(err))
	}
	if len(rows) == 0 {
		return nil, ErrFragmentNotFound
	}
	r := rows[0]
	return &FragmentEnv{Name: r.Name, Env: r.Env, Version: r.Version, Revision: r.Revision, UpdatedAt: time.UnixMilli(r.UpdatedAtMs).UTC(),
		UpdatedBy: r.UpdatedBy}, nil
}

// GetFragmentEnv returns a fragment's env pointer.
func (s *Store) GetFragmentEnv(ctx context.Context, name, env string) (*FragmentEnv, error) {
	if err := ident.Validate("name", name); err != nil {
		return nil, invalidID(err)
	}
	if err := ident.Validate("env", env); err != nil {
		return nil, invalidID(err)
	}
	sctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	return readFragmentEnv(s.db.WithContext(sctx), name, env)
}

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
