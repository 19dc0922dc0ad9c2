package promptstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pmezard/go-difflib/difflib"
	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/ident"
	"github.com/promptd/promptd/problem"
	"github.com/promptd/promptd/prompt"
	"github.com/promptd/promptd/sqlstore"
)

// Draft limits: a draft's config is at most DraftMaxBytes of JSON (a
// version's config limit, prompt.MaxConfigBytes), and one principal holds
// at most DraftMaxPerAgent drafts of one agent.
const (
	DraftMaxBytes    = prompt.MaxConfigBytes
	DraftMaxPerAgent = 20
	LimitDraftBytes  = "draft_bytes"
	LimitDrafts      = "drafts"
)

// ErrDraftNotFound: no draft of that id for that agent and owner (another
// principal's draft is not found either).
var ErrDraftNotFound = problem.New(problem.NotFound, "promptstore: draft not found", "no such draft of the agent for this principal")

// Draft is a principal's work in progress on an agent's config: never a
// version, never in a bundle, never resolvable. Its config may be invalid
// (it is validated on demand, ValidateConfig); Revision counts its writes.
type Draft struct {
	ID          string          `json:"id"`
	Agent       string          `json:"agent"`
	Owner       string          `json:"-"`
	BaseVersion int             `json:"base_version"`
	Config      json.RawMessage `json:"config"`
	Revision    int64           `json:"revision"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
}

// DraftProblem is one problem of a config, as a version create would
// report it: Code (invalid_config, undeclared_variable, ...), Field (a
// JSON path), the Variable it names if any, and Detail.
type DraftProblem struct {
	Code     string `json:"code"`
	Field    string `json:"field"`
	Variable string `json:"variable,omitempty"`
	Detail   string `json:"detail"`
}

// DraftMigrations are the drafts' schema (component "drafts").
func DraftMigrations() []sqlstore.Migration {
	return []sqlstore.Migration{{Component: "drafts", Version: 1, Name: "prompt_drafts: per-principal drafts of an agent's config",
		Up: func(tx *gorm.DB) error {
			d := sqlstore.Dialect(tx)
			id := sqlstore.IDColumnType(d)
			return sqlstore.CreateTable(tx, sqlstore.Table{
				Name: "prompt_drafts",
				Columns: []string{
					"id VARCHAR(40) NOT NULL",
					"agent " + id + " NOT NULL",
					"owner VARCHAR(256) NOT NULL",
					"base_version BIGINT NOT NULL",
					"config " + sqlstore.LongText(d) + " NOT NULL",
					"revision BIGINT NOT NULL",
					"created_at_ms BIGINT NOT NULL",
					"updated_at_ms BIGINT NOT NULL",
				},
				Primary: []string{"id"},
				Indexes: map[string]string{"prompt_drafts_owner": "agent, owner, id"},
			})
		}}}
}

type draftRow struct {
	ID          string
	Agent       string
	Owner       string
	BaseVersion int
	Config      string
	Revision    int64
	CreatedAtMs int64
	UpdatedAtMs int64
}

func (r draftRow) draft() *Draft {
	return &Draft{ID: r.ID, Agent: r.Agent, Owner: r.Owner, BaseVersion: r.BaseVersion, Config: json.RawMessage(r.Config),
		Revision: r.Revision, CreatedAt: time.UnixMilli(r.CreatedAtMs).UTC(), UpdatedAt: time.UnixMilli(r.UpdatedAtMs).UTC()}
}

const draftCols = `id, agent, owner, base_version, config, revision, created_at_ms, updated_at_ms`

// newDraftID is "drf_", 12 hex digits of milliseconds (ids sort by
// creation), then 8 random hex digits.
func newDraftID(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("drf_%012x%s", now.UnixMilli(), hex.EncodeToString(b[:]))
}

// draftConfig checks a draft's config: a JSON object of at most
// DraftMaxBytes, stored compacted.
func draftConfig(raw json.RawMessage) ([]byte, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil || buf.Len() == 0 || buf.Bytes()[0] != '{' {
		return nil, invalid(CodeInvalidField, "config", "config must be a JSON object")
	}
	if buf.Len() > DraftMaxBytes {
		return nil, &LimitError{Name: LimitDraftBytes, Limit: DraftMaxBytes, Detail: "a draft's config takes more than %d bytes"}
	}
	return buf.Bytes(), nil
}

func checkOwner(agent, owner string) error {
	if err := ident.Validate("agent", agent); err != nil {
		return invalidID(err)
	}
	if owner == "" {
		return errors.New("promptstore: a draft needs an owner")
	}
	return nil
}

// CreateDraft starts a draft of agent for owner from version base (which
// must exist; 0 for an agent with no version yet), with config, or the
// base's config when config is empty. Over DraftMaxPerAgent drafts of the
// agent for owner: *LimitError (drafts).
func (s *Store) CreateDraft(ctx context.Context, agent, owner string, base int, config json.RawMessage) (*Draft, error) {
	if err := checkOwner(agent, owner); err != nil {
		return nil, err
	}
	if base < 0 || base >= MaxVersion {
		return nil, invalid(CodeInvalidField, "base_version", "base_version must be 0..%d", MaxVersion-1)
	}
	if len(bytes.TrimSpace(config)) == 0 || string(bytes.TrimSpace(config)) == "null" {
		if base == 0 {
			return nil, invalid(CodeInvalidField, "config", "config is required for a draft from version 0 (a new agent)")
		}
		v, err := s.GetVersion(ctx, agent, base)
		if err != nil {
			return nil, err
		}
		config = v.Config
	} else if base > 0 {
		if _, err := s.GetVersion(ctx, agent, base); err != nil {
			return nil, err
		}
	}
	doc, err := draftConfig(config)
	if err != nil {
		return nil, err
	}
	now := s.now()
	ms := now.UnixMilli()
	d := &Draft{ID: newDraftID(now), Agent: agent, Owner: owner, BaseVersion: base, Config: doc, Revision: 1,
		CreatedAt: time.UnixMilli(ms).UTC(), UpdatedAt: time.UnixMilli(ms).UTC()}
	sctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	_, err = sqlstore.Transact(sctx, s.db, func(tx *gorm.DB) (*Draft, error) {
		var n int64
		if err := tx.Raw(`SELECT COUNT(*) FROM prompt_drafts WHERE agent = ? AND owner = ?`, agent, owner).Scan(&n).Error; err != nil {
			return nil, err
		}
		if n >= DraftMaxPerAgent {
			return nil, &LimitError{Name: LimitDrafts, Limit: DraftMaxPerAgent, Detail: "a principal holds at most %d drafts of one agent"}
		}
		return d, tx.Exec(`INSERT INTO prompt_drafts (`+draftCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			d.ID, agent, owner, base, string(doc), d.Revision, ms, ms).Error
	})
	if err != nil {
		return nil, storeErr(err)
	}
	return d, nil
}

func readDraft(db *gorm.DB, agent, owner, id string) (*Draft, error) {
	var rows []draftRow
	if err := db.Raw(`SELECT `+draftCols+` FROM prompt_drafts WHERE id = ? AND agent = ? AND owner = ?`, id, agent, owner).
		Scan(&rows).Error; err != nil {
		return nil, storeErr(sqlstore.Translate(err))
	}
	if len(rows) == 0 {
		return nil, ErrDraftNotFound
	}
	return rows[0].draft(), nil
}

// GetDraft returns owner's draft id of agent (ErrDraftNotFound when it is
// not owner's).
func (s *Store) GetDraft(ctx context.Context, agent, owner, id string) (*Draft, error) {
	if err := checkOwner(agent, owner); err != nil {
		return nil, err
	}
	sctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	return readDraft(s.db.WithContext(sctx), agent, owner, id)
}

// ListDrafts lists owner's drafts of agent, oldest first; the cursor is
// the last id of the previous page.
func (s *Store) ListDrafts(ctx context.Context, agent, owner string, p Page) ([]*Draft, string, error) {
	if err := checkOwner(agent, owner); err != nil {
		return nil, "", err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 50
	}
	sctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	rs, err := s.db.WithContext(sctx).Raw(`SELECT `+draftCols+` FROM prompt_drafts WHERE agent = ? AND owner = ? AND id > ? ORDER BY id LIMIT ?`,
		agent, owner, p.Cursor, limit+1).Rows()
	if err != nil {
		return nil, "", storeErr(sqlstore.Translate(err))
	}
	rows, full, err := sqlstore.ScanPage(rs, limit, PageMaxBytes, func(rs *sql.Rows) (draftRow, int, error) {
		var r draftRow
		err := rs.Scan(&r.ID, &r.Agent, &r.Owner, &r.BaseVersion, &r.Config, &r.Revision, &r.CreatedAtMs, &r.UpdatedAtMs)
		return r, len(r.Config), err
	})
	if err != nil {
		return nil, "", storeErr(sqlstore.Translate(err))
	}
	out := make([]*Draft, len(rows))
	for i, r := range rows {
		out[i] = r.draft()
	}
	next := ""
	if full && len(rows) > 0 {
		next = rows[len(rows)-1].ID
	}
	return out, next, nil
}

// UpdateDraft replaces the config of owner's draft when its revision is
// expected (an autosave): another revision is *RevisionConflict (two tabs
// raced), nothing written.
func (s *Store) UpdateDraft(ctx context.Context, agent, owner, id string, config json.RawMessage, expected int64) (*Draft, error) {
	if err := checkOwner(agent, owner); err != nil {
		return nil, err
	}
	doc, err := draftConfig(config)
	if err != nil {
		return nil, err
	}
	ms := s.now().UnixMilli()
	sctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	return sqlstore.Transact(sctx, s.db, func(tx *gorm.DB) (*Draft, error) {
		res := tx.Exec(`UPDATE prompt_drafts SET config = ?, revision = revision + 1, updated_at_ms = ?
			WHERE id = ? AND agent = ? AND owner = ? AND revision = ?`, string(doc), ms, id, agent, owner, expected)
		if res.Error != nil {
			return nil, res.Error
		}
		d, err := readDraft(tx, agent, owner, id)
		if err != nil {
			return nil, err
		}
		if res.RowsAffected != 1 {
			s.o.Metrics.conflict("draft")
			return nil, &RevisionConflict{Expected: expected, Current: d.Revision}
		}
		return d, nil
	})
}

// DeleteDraft deletes owner's draft.
func (s *Store) DeleteDraft(ctx context.Context, agent, owner, id string) error {
	if err := checkOwner(agent, owner); err != nil {
		return err
	}
	sctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	res := s.db.WithContext(sctx).Exec(`DELETE FROM prompt_drafts WHERE id = ? AND agent = ? AND owner = ?`, id, agent, owner)
	if res.Error != nil {
		return storeErr(sqlstore.Translate(res.Error))
	}
	if res.RowsAffected == 0 {
		return ErrDraftNotFound
	}
	return nil
}

// PublishDraft creates the version of owner's draft (CreateVersion with
// the draft's base: a stale base is *VersionConflict, or with merge the
// three-way merge, *MergeConflict when both sides changed a path) and
// deletes the draft in the same transaction, with a draft.published
// audit row. A draft written since it was read is *RevisionConflict.
func (s *Store) PublishDraft(ctx context.Context, agent, owner, id, message string, merge bool) (*Version, error) {
	d, err := s.GetDraft(ctx, agent, owner, id)
	if err != nil {
		return nil, err
	}
	in := CreateVersionInput{Agent: agent, BaseVersion: d.BaseVersion, Config: d.Config, Message: message, Merge: merge}
	return s.CreateVersion(ctx, in, func(tx *gorm.DB, v *Version) error {
		res := tx.Exec(`DELETE FROM prompt_drafts WHERE id = ? AND agent = ? AND owner = ? AND revision = ?`, id, agent, owner, d.Revision)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			cur, err := readDraft(tx, agent, owner, id)
			if err != nil {
				return err
			}
			return &RevisionConflict{Expected: d.Revision, Current: cur.Revision}
		}
		return s.audit.Append(ctx, tx, audit.Event{Action: "draft.published", Agent: agent,
			Resource: fmt.Sprintf("agents/%s/drafts/%s", agent, id)},
			map[string]any{"draft": id, "version": v.Version, "base_version": d.BaseVersion, "draft_revision": d.Revision})
	})
}

// maxProblems bounds the problems ValidateConfig lists.
const maxProblems = 50

// ValidateConfig lists every problem a version create would find in
// config (prompt.ParseConfig, and the fragments' references pinned as a
// publish pins them), empty when it would be accepted. A create stops at
// the first problem; ValidateConfig sets each problem's member aside (an
// undeclared placeholder is declared, a bad member removed) and goes on.
// Only a store failure is an error.
func (s *Store) ValidateConfig(ctx context.Context, agent string, config json.RawMessage) ([]DraftProblem, error) {
	out := []DraftProblem{}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(config))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil || doc == nil {
		return append(out, DraftProblem{Code: CodeInvalidConfig, Field: "config", Detail: "config must be a JSON object"}), nil
	}
	sctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	db := s.db.WithContext(sctx)
	tolerated := map[string]bool{} // variables removed for a bad declaration: their placeholders are not reported again
	for range maxProblems {
		raw, err := json.Marshal(doc)
		if err != nil {
			return nil, err
		}
		p, err := prepare(CreateVersionInput{Agent: agent, Config: raw})
		if err == nil {
			_, err = p.pinIn(db)
		}
		if err == nil {
			return out, nil
		}
		var ie *InvalidError
		if !errors.As(err, &ie) {
			pr := problem.Of(err)
			if pr.Status() >= 500 {
				return nil, err
			}
			out = append(out, DraftProblem{Code: pr.Code, Field: "config.fragments", Detail: pr.Detail})
			if _, ok := doc["fragments"]; !ok {
				return out, nil
			}
			delete(doc, "fragments")
			continue
		}
		if ie.Code == CodeUndeclaredVariable && ie.Variable != "" {
			if !tolerated[ie.Variable] {
				out = append(out, DraftProblem{Code: ie.Code, Field: ie.Field, Variable: ie.Variable, Detail: ie.Detail})
			}
			vars, _ := doc["variables"].(map[string]any)
			if vars == nil {
				vars = map[string]any{}
				doc["variables"] = vars
			}
			vars[ie.Variable] = map[string]any{}
			continue
		}
		out = append(out, DraftProblem{Code: ie.Code, Field: ie.Field, Variable: ie.Variable, Detail: ie.Detail})
		if !setAside(doc, ie.Field, tolerated) {
			return out, nil
		}
	}
	return out, nil
}

// setAside removes the member of doc a problem's field names (an array's
// element when the path indexes one; system is replaced by a plain
// text), reporting whether anything changed.
func setAside(doc map[string]any, field string, tolerated map[string]bool) bool {
	rest, ok := strings.CutPrefix(field, "config.")
	if !ok || rest == "" {
		return false
	}
	top, tail := rest, ""
	if i := strings.IndexAny(rest, ".["); i >= 0 {
		top, tail = rest[:i], rest[i:]
	}
	v, ok := doc[top]
	if !ok {
		return false
	}
	if top == "system" {
		if s, isStr := v.(string); isStr && s == "-" {
			return false
		}
		doc["system"] = "-"
		return true
	}
	if strings.HasPrefix(tail, "[") {
		if arr, isArr := v.([]any); isArr {
			if j := strings.IndexByte(tail, ']'); j > 0 {
				if n, err := strconv.Atoi(tail[1:j]); err == nil && n >= 0 && n < len(arr) {
					doc[top] = append(arr[:n:n], arr[n+1:]...)
					return true
				}
			}
		}
	}
	if (top == "variables" || top == "fragments") && strings.HasPrefix(tail, ".") {
		if m, isMap := v.(map[string]any); isMap {
			name := tail[1:]
			if i := strings.IndexAny(name, ".["); i >= 0 {
				name = name[:i]
			}
			if _, has := m[name]; has {
				delete(m, name)
				if top == "variables" {
					tolerated[name] = true
				}
				return true
			}
		}
	}
	delete(doc, top)
	if top == "variables" {
		if m, isMap := v.(map[string]any); isMap {
			for name := range m {
				tolerated[name] = true
			}
		}
	}
	return true
}

// DraftDiff is the unified diff of owner's draft against its base version
// (the old side), as Diff renders two versions: sorted-key, 2-space
// JSON, the same size limits; never cached (a draft changes).
func (s *Store) DraftDiff(ctx context.Context, agent, owner, id string) (string, error) {
	d, err := s.GetDraft(ctx, agent, owner, id)
	if err != nil {
		return "", err
	}
	old := []byte("{}")
	if d.BaseVersion > 0 {
		v, err := s.GetVersion(ctx, agent, d.BaseVersion)
		if err != nil {
			return "", err
		}
		old = v.Config
	}
	canon, err := Canonical(d.Config)
	if err != nil {
		return "", invalid(CodeInvalidConfig, "config", "%v", err)
	}
	lim := s.o.Limits
	pa, pb := Pretty(old), Pretty(canon)
	if int64(len(pa)+len(pb)) > lim.DiffMaxBytes {
		return "", limitError(LimitDiffBytes, lim.DiffMaxBytes)
	}
	if bytes.Count(pa, []byte{'\n'})+bytes.Count(pb, []byte{'\n'})+2 > lim.DiffMaxLines {
		return "", limitError(LimitDiffLines, int64(lim.DiffMaxLines))
	}
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A:        difflib.SplitLines(string(pa)),
		B:        difflib.SplitLines(string(pb)),
		FromFile: fmt.Sprintf("%s/v%d", agent, d.BaseVersion),
		ToFile:   fmt.Sprintf("%s/%s", agent, id),
		Context:  3,
	})
}
