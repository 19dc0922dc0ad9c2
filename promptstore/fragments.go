package promptstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
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
