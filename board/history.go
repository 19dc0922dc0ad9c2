package board

import (
	"encoding/json"
	"fmt"

	"gorm.io/gorm"

	"github.com/promptd/promptd/internal/canonjson"
	"github.com/promptd/promptd/jsonmerge"
	"github.com/promptd/promptd/problem"
)

// KeptPayloads is how many payload versions of a record the board keeps
// (at least; pruning runs every keepPruneEvery revisions): a merge's base
// revision must be one of them.
const KeptPayloads = 16

const keepPruneEvery = 8

// MergeKeys identify the elements of a payload's arrays of objects in a
// merge, tried in order: "id", then "name".
var MergeKeys = []string{"id", "name"}

// contentHash is the sha256 of a payload's canonical JSON.
func contentHash(payload string) string {
	c, err := canonjson.Canonical([]byte(payload))
	if err != nil { // stored payloads are valid JSON; hash the bytes
		c = []byte(payload)
	}
	return canonjson.Hash(c)
}

// keepPayload records next's payload at its revision when the write
// changes it (or prev is nil: a create), and prunes the oldest kept ones
// now and then.
func (s *Service) keepPayload(tx *gorm.DB, prev, next *recordRow) error {
	if prev != nil && prev.Payload == next.Payload {
		return nil
	}
	if err := tx.Exec(`INSERT INTO board_record_payloads (board, id, revision, content_hash, payload) VALUES (?, ?, ?, ?, ?)`,
		next.Board, next.ID, next.Revision, contentHash(next.Payload), next.Payload).Error; err != nil {
		return err
	}
	if next.Revision%keepPruneEvery != 0 {
		return nil
	}
	return tx.Exec(`DELETE FROM board_record_payloads WHERE board = ? AND id = ? AND revision < (
		SELECT MIN(revision) FROM (SELECT revision FROM board_record_payloads WHERE board = ? AND id = ? ORDER BY revision DESC LIMIT ?) kept)`,
		next.Board, next.ID, next.Board, next.ID, KeptPayloads).Error
}

// payloadAt is the record's payload at revision (the newest kept at or
// below it), and false when the board no longer keeps it. Pruning drops
// the oldest rows only, so a kept row at or below revision has no payload
// change after it up to revision: it is the payload there.
func payloadAt(tx *gorm.DB, board, id string, revision int64) (string, string, bool, error) {
	var rows []struct {
		Revision    int64
		ContentHash string
		Payload     string
	}
	if err := tx.Raw(`SELECT revision, content_hash, payload FROM board_record_payloads WHERE board = ? AND id = ? AND revision <= ?
		ORDER BY revision DESC LIMIT 1`, board, id, revision).Scan(&rows).Error; err != nil {
		return "", "", false, err
	}
	if len(rows) == 0 {
		return "", "", false, nil
	}
	return rows[0].Payload, rows[0].ContentHash, true, nil
}

// MergeConflict: a merge of a payload (or a config) met changes on both
// sides at the same paths. Paths are per path the base, ours and theirs.
type MergeConflict struct {
	CurrentRevision int64
	ContentHash     string
	Paths           []jsonmerge.Conflict
}

func (e *MergeConflict) Error() string {
	return fmt.Sprintf("board: merge conflict at %d paths (current revision %d)", len(e.Paths), e.CurrentRevision)
}

// Problem is 409 merge_conflict with the paths and the current revision.
func (e *MergeConflict) Problem() *problem.Problem {
	return (&problem.Problem{Code: problem.MergeConflict, Detail: fmt.Sprintf(
		"both sides changed %d paths of the payload since the base revision; resolve them and resubmit on revision %d", len(e.Paths), e.CurrentRevision)}).
		With("current_revision", e.CurrentRevision).With("content_hash", e.ContentHash).With("conflicts", e.Paths)
}

// merged is ours merged over r's current payload from the payload at
// base (the revision the writer read): basePayload, when given, must be
// that payload (its content hash is checked). A base the board no longer
// keeps, or a basePayload that is not it, is *RevisionConflict with the
// current revision.
func (s *Service) merged(tx *gorm.DB, r *recordRow, base int64, basePayload, ours json.RawMessage) (json.RawMessage, error) {
	conflict := &RevisionConflict{Expected: base, Current: r.Revision}
	b, hash, ok, err := payloadAt(tx, r.Board, r.ID, base)
	if err != nil || !ok {
		return nil, errOr(err, conflict)
	}
	if basePayload != nil {
		c, err := canonjson.Canonical(basePayload)
		if err != nil || canonjson.Hash(c) != hash {
			return nil, conflict
		}
	}
	out, conflicts, err := jsonmerge.Merge([]byte(b), ours, []byte(r.Payload), jsonmerge.Options{Keys: MergeKeys})
	if err != nil {
		return nil, invalidf("payload", "payload: %v", err)
	}
	if len(conflicts) > 0 {
		return nil, &MergeConflict{CurrentRevision: r.Revision, ContentHash: contentHash(r.Payload), Paths: conflicts}
	}
	return out, nil
}

func errOr(err, other error) error {
	if err != nil {
		return err
	}
	return other
}
