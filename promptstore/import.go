package promptstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/problem"
	"github.com/promptd/promptd/sqlstore"
)

// Import modes.
const (
	ImportPartial      = "partial"
	ImportAllOrNothing = "all_or_nothing"
)

// MaxImportItems bounds one import.
const MaxImportItems = 10000

// importBatch is how many rows one multi-row statement writes.
const importBatch = 500

// ImportItem is one version create of an import.
type ImportItem struct {
	Agent       string          `json:"agent"`
	BaseVersion int             `json:"base_version"`
	Config      json.RawMessage `json:"config"`
	Message     string          `json:"message"`
}

// ImportInput is a batch of version creates.
type ImportInput struct {
	Mode  string
	Items []ImportItem
}

// ItemError says why an item was not created.
type ItemError struct {
	Code     string `json:"code"`
	Field    string `json:"field,omitempty"`
	Variable string `json:"variable,omitempty"`
	Detail   string `json:"detail"`
}

// ImportItemResult is the outcome of one item, in request order.
type ImportItemResult struct {
	Agent         string     `json:"agent"`
	Status        string     `json:"status"` // created, conflict, invalid
	Version       *int       `json:"version,omitempty"`
	LatestVersion *int       `json:"latest_version,omitempty"`
	Error         *ItemError `json:"error,omitempty"`
}

// ImportSummary counts the outcomes.
type ImportSummary struct {
	Created  int `json:"created"`
	Conflict int `json:"conflict"`
	Invalid  int `json:"invalid"`
}

// ImportResult is the answer to an import.
type ImportResult struct {
	BatchFingerprint string             `json:"batch_fingerprint"`
	Results          []ImportItemResult `json:"results"`
	Summary          ImportSummary      `json:"summary"`
}

// ImportRejected: an all_or_nothing import had a conflict or an invalid
// item, so nothing was written.
type ImportRejected struct {
	Result *ImportResult
}

func (e *ImportRejected) Error() string {
	return fmt.Sprintf("promptstore: import rejected: %d conflict, %d invalid", e.Result.Summary.Conflict, e.Result.Summary.Invalid)
}

// Problem is 409 import_rejected with every item's result.
func (e *ImportRejected) Problem() *problem.Problem {
	r := e.Result
	return (&problem.Problem{Code: problem.ImportRejected, Detail: fmt.Sprintf(
		"all_or_nothing: %d conflict and %d invalid items; nothing was written", r.Summary.Conflict, r.Summary.Invalid)}).
		With("batch_fingerprint", r.BatchFingerprint).With("results", r.Results).With("summary", r.Summary)
}

// Fingerprint is the hash of the canonical {mode, items} of an import.
func (in ImportInput) Fingerprint() (string, error) {
	raw, err := json.Marshal(struct {
		Mode  string       `json:"mode"`
		Items []ImportItem `json:"items"`
	}{in.Mode, in.Items})
	if err != nil {
		return "", err
	}
	canon, err := Canonical(raw)
	if err != nil {
		return "", err
	}
	return ContentHash(canon), nil
}

// Import applies a batch of version creates in one transaction, each item
// checked like a version create; items for one agent are chained in order
// (the second's base is the first's new version). The agents' rows are
// read (and, on MySQL, locked) once, and rows are written with multi-row
// statements, not one round trip per item. all_or_nothing writes nothing
// if any item fails (*ImportRejected); partial writes the rest.
func (s *Store) Import(ctx context.Context, in ImportInput, then ...sqlstore.Then[*ImportResult]) (*ImportResult, error) {
	if in.Mode != ImportPartial && in.Mode != ImportAllOrNothing {
		return nil, invalid(CodeInvalidField, "mode", `mode must be "partial" or "all_or_nothing"`)
	}
	if len(in.Items) == 0 || len(in.Items) > MaxImportItems {
		return nil, invalid(CodeInvalidField, "items", "1..%d items", MaxImportItems)
	}
	fp, err := in.Fingerprint()
	if err != nil {
		return nil, invalid(CodeInvalidField, "items", "%v", err)
	}
	res := &ImportResult{BatchFingerprint: fp, Results: make([]ImportItemResult, len(in.Items))}
	preps := make([]*prepared, len(in.Items))
	for i, it := range in.Items {
		res.Results[i].Agent = it.Agent
		p, err := prepare(CreateVersionInput{Agent: it.Agent, BaseVersion: it.BaseVersion, Config: it.Config, Message: it.Message})
		if err != nil {
			res.Results[i].Status = "invalid"
			res.Results[i].Error = itemError(err)
			continue
		}
		preps[i] = p
	}
	sctx, cancel := context.WithTimeout(ctx, 12*s.o.SQLTimeout)
	defer cancel()
	ms := s.now().UnixMilli()
	var out *ImportResult
	for attempt := 0; ; attempt++ {
		try := &ImportResult{BatchFingerprint: res.BatchFingerprint, Results: append([]ImportItemResult(nil), res.Results...), Summary: res.Summary}
		out, err = sqlstore.Transact(sctx, s.db, func(tx *gorm.DB) (*ImportResult, error) {
			return s.importTx(sctx, tx, in.Mode, preps, try, ms)
		}, then...)
		// A duplicate key: another writer created one of the batch's new
		// agents between our read and our insert. Nothing was written; a
		// second pass reads the new bases and reports that item as a
		// conflict like any other.
		if !sqlstore.IsDuplicate(err) || attempt == 2 {
			break
		}
	}
	if err != nil {
		return nil, storeErr(err)
	}
	actor := audit.Actor(ctx)
	for i, p := range preps {
		if p != nil && out.Results[i].Status == "created" {
			v := &Version{Agent: p.in.Agent, Version: *out.Results[i].Version, Config: p.canon, ContentHash: p.hash, Message: p.in.Message,
				CreatedBy: actor, CreatedAt: time.UnixMilli(ms).UTC()}
			s.snaps.put(&Snapshot{Version: v, Parsed: p.parsed})
		}
	}
	return out, nil
}

func itemError(err error) *ItemError {
	if ie, ok := err.(*InvalidError); ok {
		return &ItemError{Code: ie.Code, Field: ie.Field, Variable: ie.Variable, Detail: ie.Detail}
	}
	return &ItemError{Code: CodeInvalidConfig, Detail: err.Error()}
}

type agentState struct {
	orig     int // latest version as read under the lock
	latest   int
	hash     string
	existed  bool
	assigned bool // a version was created for it in this batch
}

func (s *Store) importTx(ctx context.Context, tx *gorm.DB, mode string, preps []*prepared, res *ImportResult, ms int64) (*ImportResult, error) {
	// Read (and lock) every agent of the batch once.
	agents := map[string]*agentState{}
	var names []string
	for _, p := range preps {
		if p != nil && agents[p.in.Agent] == nil {
			agents[p.in.Agent] = &agentState{}
			names = append(names, p.in.Agent)
		}
	}
	lock := ""
	if sqlstore.Dialect(tx) == sqlstore.MySQL {
		lock = " FOR UPDATE"
	}
	for start := 0; start < len(names); start += importBatch {
		chunk := names[start:min(start+importBatch, len(names))]
		var rows []struct {
			Agent         string
			LatestVersion int
		}
		if err := tx.Raw(`SELECT agent, latest_version FROM prompt_agents WHERE agent IN ?`+lock, chunk).Scan(&rows).Error; err != nil {
			return nil, err
		}
		for _, r := range rows {
			a := agents[r.Agent]
			a.orig, a.latest, a.existed = r.LatestVersion, r.LatestVersion, true
		}
	}
	// Chain the items in order. Once an item of an agent is not applied
	// (invalid or a conflict), its later items are conflicts too: they were
	// written to build on it, and applying one could put it on top of a
	// version its author never saw (someone else's with the same number).
	created := make([]int, len(preps))
	broken := map[string]int{} // agent -> index of its first item not applied
	for i, p := range preps {
		if p != nil && p.needsPin { // fragments are pinned in this transaction
			q, err := p.pinIn(tx)
			var ie *InvalidError
			switch {
			case errors.As(err, &ie):
				res.Results[i].Status, res.Results[i].Error = "invalid", itemError(ie)
				p = nil
			case err != nil:
				return nil, err
			default:
				p, preps[i] = q, q
			}
		}
		if p == nil {
			res.Summary.Invalid++
			if _, ok := broken[res.Results[i].Agent]; !ok {
				broken[res.Results[i].Agent] = i
			}
			continue
		}
		a := agents[p.in.Agent]
		if first, ok := broken[p.in.Agent]; ok {
			latest := a.latest
			res.Results[i] = ImportItemResult{Agent: p.in.Agent, Status: "conflict", LatestVersion: &latest,
				Error: &ItemError{Code: "version_conflict", Field: "base_version",
					Detail: fmt.Sprintf("item %d of agent %s was not applied, and this item comes after it", first, p.in.Agent)}}
			res.Summary.Conflict++
			continue
		}
		if p.in.BaseVersion != a.latest {
			latest := a.latest
			res.Results[i] = ImportItemResult{Agent: p.in.Agent, Status: "conflict", LatestVersion: &latest}
			res.Summary.Conflict++
			broken[p.in.Agent] = i
			continue
		}
		a.latest++
		a.hash, a.assigned = p.hash, true
		v := a.latest
		created[i] = v
		res.Results[i] = ImportItemResult{Agent: p.in.Agent, Status: "created", Version: &v}
		res.Summary.Created++
	}
	if mode == ImportAllOrNothing && (res.Summary.Conflict > 0 || res.Summary.Invalid > 0) {
		for i := range res.Results {
			if res.Results[i].Status == "created" { // nothing is written
				res.Results[i].Version = nil
				res.Results[i].Status = "not_applied"
			}
		}
		res.Summary.Created = 0
		return nil, &ImportRejected{Result: res}
	}
	actor := audit.Actor(ctx)
	if err := s.writeAgents(tx, names, agents, ms); err != nil {
		return nil, err
	}
	var versions, events [][]any
	for i, p := range preps {
		if created[i] == 0 {
			continue
		}
		versions = append(versions, []any{p.in.Agent, created[i], string(p.canon), p.hash, p.in.Message, actor, ms})
		details, _ := json.Marshal(map[string]any{"version": created[i], "content_hash": p.hash, "base_version": p.in.BaseVersion, "import": res.BatchFingerprint})
		events = append(events, []any{ms, actor, s.o.Instance, "version.created", p.in.Agent, "", "",
			fmt.Sprintf("agents/%s/versions/%d", p.in.Agent, created[i]), string(details)})
	}
	if err := insertRows(tx, "prompt_versions", "agent, version, config, content_hash, message, created_by, created_at_ms", versions); err != nil {
		return nil, err
	}
	if err := insertRows(tx, "audit_events", "at_ms, actor, instance, action, agent, env, session_id, resource, details", events); err != nil {
		return nil, err
	}
	for i, p := range preps {
		if created[i] != 0 {
			if err := recordUses(tx, p.in.Agent, created[i], p.parsed); err != nil {
				return nil, err
			}
		}
	}
	if err := s.audit.Append(ctx, tx, audit.Event{Action: "import.applied", Resource: "import"}, map[string]any{
		"batch_fingerprint": res.BatchFingerprint, "mode": mode, "summary": res.Summary}); err != nil {
		return nil, err
	}
	return res, nil
}

// writeAgents inserts new agents and moves existing ones to their new
// latest version with multi-row statements. Existing rows were read under
// the transaction's lock (FOR UPDATE on MySQL; SQLite's one writer), and
// their update keeps the condition on the version read, checked by rows
// affected. New agents are plain inserts: a concurrent creator makes the
// whole import fail rather than be overwritten.
func (s *Store) writeAgents(tx *gorm.DB, names []string, agents map[string]*agentState, ms int64) error {
	var inserts [][]any
	var updates []string
	for _, n := range names {
		a := agents[n]
		switch {
		case !a.assigned:
		case !a.existed:
			inserts = append(inserts, []any{n, a.latest, a.hash, 1, ms, ms})
		default:
			updates = append(updates, n)
		}
	}
	if err := insertRows(tx, "prompt_agents", "agent, latest_version, latest_content_hash, revision, created_at_ms, updated_at_ms", inserts); err != nil {
		return err
	}
	for start := 0; start < len(updates); start += importBatch {
		chunk := updates[start:min(start+importBatch, len(updates))]
		var vcase, hcase, cond strings.Builder
		var vargs, hargs, cargs []any
		for i, n := range chunk {
			a := agents[n]
			vcase.WriteString(" WHEN ? THEN ?")
			vargs = append(vargs, n, a.latest)
			hcase.WriteString(" WHEN ? THEN ?")
			hargs = append(hargs, n, a.hash)
			if i > 0 {
				cond.WriteString(" OR ")
			}
			cond.WriteString("(agent = ? AND latest_version = ?)")
			cargs = append(cargs, n, a.orig)
		}
		q := `UPDATE prompt_agents SET latest_version = CASE agent` + vcase.String() + ` END, latest_content_hash = CASE agent` +
			hcase.String() + ` END, revision = revision + 1, updated_at_ms = ? WHERE ` + cond.String()
		args := append(append(append(vargs, hargs...), ms), cargs...)
		r := tx.Exec(q, args...)
		if r.Error != nil {
			return r.Error
		}
		if int(r.RowsAffected) != len(chunk) {
			return fmt.Errorf("promptstore: import: %d of %d agent rows changed under the batch", len(chunk)-int(r.RowsAffected), len(chunk))
		}
	}
	return nil
}

// maxStatementBytes keeps one multi-row statement well below MySQL's
// max_allowed_packet (16 MiB by default).
const maxStatementBytes = 4 << 20

// insertRows writes rows with multi-row INSERTs of at most importBatch rows
// and about maxStatementBytes of values each.
func insertRows(tx *gorm.DB, table, cols string, rows [][]any) error {
	n := strings.Count(cols, ",") + 1
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", n), ", ") + ")"
	for start := 0; start < len(rows); {
		end, size := start, 0
		for end < len(rows) && end-start < importBatch && (end == start || size < maxStatementBytes) {
			for _, v := range rows[end] {
				if s, ok := v.(string); ok {
					size += len(s)
				}
			}
			end++
		}
		args := make([]any, 0, (end-start)*n)
		for _, r := range rows[start:end] {
			args = append(args, r...)
		}
		q := "INSERT INTO " + table + " (" + cols + ") VALUES " + strings.TrimSuffix(strings.Repeat(one+", ", end-start), ", ")
		if err := tx.Exec(q, args...).Error; err != nil {
			return err
		}
		start = end
	}
	return nil
}
