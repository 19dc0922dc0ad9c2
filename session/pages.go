package session

import (
	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

// Pages of turns are bounded by count and by bytes. The sizes are read
// first (seq, role and the stored size, never the content), the page is
// cut where the budget ends, and only then are the turns of the page read:
// a session of 10,000 large turns never comes into memory at once.

type turnSize struct {
	Seq  int64
	Role string
	Size int64
}

const turnCols = `seq, role, content, name, tool_call_id, tool_calls, metadata, created_at_ms`

// turnSizes lists up to limit turns of a session after seq since, oldest
// first (newest first with desc, since ignored), with their sizes.
func turnSizes(tx *gorm.DB, id string, since int64, limit int, desc bool) ([]turnSize, error) {
	q := `SELECT seq, role, ` + turnSizeSQL(sqlstore.Dialect(tx), "") + ` AS size FROM session_turns WHERE session_id = ?`
	args := []any{id}
	if desc {
		q += ` ORDER BY seq DESC`
	} else {
		q += ` AND seq > ? ORDER BY seq`
		args = append(args, since)
	}
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	var out []turnSize
	return out, tx.Raw(q, args...).Scan(&out).Error
}

// fit is how many of sizes, in order, fit in budget bytes (every one
// when budget <= 0); with atLeastOne a first turn larger than the budget
// still makes a page of one.
func fit(sizes []turnSize, budget int64, atLeastOne bool) int {
	if budget <= 0 {
		return len(sizes)
	}
	var sum int64
	for i, t := range sizes {
		sum += t.Size
		if sum > budget {
			if i == 0 && atLeastOne {
				return 1
			}
			return i
		}
	}
	return len(sizes)
}

// turnsBetween reads the turns with from <= seq <= to, oldest first.
func turnsBetween(tx *gorm.DB, id string, from, to int64) ([]turnRow, error) {
	var rows []turnRow
	err := tx.Raw(`SELECT `+turnCols+` FROM session_turns WHERE session_id = ? AND seq >= ? AND seq <= ? ORDER BY seq`,
		id, from, to).Scan(&rows).Error
	return rows, err
}

// turnPage is the page of Get: at most limit turns after since, within
// budget bytes (at least one turn), and the seq to continue after when
// more follow.
func turnPage(tx *gorm.DB, id string, since int64, limit int, budget int64) ([]turnRow, *int64, error) {
	sizes, err := turnSizes(tx, id, since, limit+1, false)
	if err != nil || len(sizes) == 0 {
		return nil, nil, err
	}
	n := fit(sizes[:min(limit, len(sizes))], budget, true)
	rows, err := turnsBetween(tx, id, sizes[0].Seq, sizes[n-1].Seq)
	if err != nil {
		return nil, nil, err
	}
	if n < len(sizes) {
		next := sizes[n-1].Seq
		return rows, &next, nil
	}
	return rows, nil, nil
}

// historyTurns are the newest turns of a session for assembly: at most
// max (all with max <= 0), within budget bytes (no bound with budget <= 0),
// never starting with tool turns cut off from the assistant turn whose
// tool_calls they answer. Oldest first.
func historyTurns(tx *gorm.DB, id string, max int, budget int64) ([]turnRow, error) {
	sizes, err := turnSizes(tx, id, 0, max, true) // newest first
	if err != nil {
		return nil, err
	}
	n := fit(sizes, budget, false)
	cut := max > 0 && len(sizes) == max || n < len(sizes) // older turns were left out
	sizes = sizes[:n]
	for cut && len(sizes) > 0 && sizes[len(sizes)-1].Role == "tool" {
		sizes = sizes[:len(sizes)-1]
	}
	if len(sizes) == 0 {
		return nil, nil
	}
	return turnsBetween(tx, id, sizes[len(sizes)-1].Seq, sizes[0].Seq)
}
