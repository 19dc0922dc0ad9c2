package session

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"strconv"

	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

// MaxStateKeysPerRead is how many keys one read of state entries may name.
const MaxStateKeysPerRead = 1000

// LimitStateBytes names the bound on one state answer (StateJSON), met
// only by sessions written before the limits or above lowered ones.
const LimitStateBytes = "state_bytes"

// State returns the blackboard entries of a session: every one, or those
// named in keys (names without an entry are left out).
func (s *Service) State(ctx context.Context, id string, keys ...string) (map[string]StateEntry, error) {
	out := map[string]StateEntry{}
	err := s.eachState(ctx, id, keys, nil, func(key string, value []byte, rev int64) error {
		out[key] = StateEntry{Value: bytes.Clone(value), Revision: rev}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// StateJSON appends to dst the entries State returns as one JSON object
// {key: {value, revision}} in key order, values compacted, with a
// trailing newline. The rows are copied once, straight into dst: the
// answer takes about the session's state bytes (at most
// Options.MaxSessionBytes) and no second copy. An answer that would
// exceed MaxSessionBytes plus 64 bytes per entry anyway is a
// *problem.LimitError (state_bytes); ask for fewer keys then.
func (s *Service) StateJSON(ctx context.Context, id string, keys []string, dst []byte) ([]byte, error) {
	bound := s.o.MaxSessionBytes + 64*s.o.MaxStateKeys
	buf := bytes.NewBuffer(dst)
	buf.WriteByte('{')
	first := true
	grow := func(n int64) { buf.Grow(int(min(n, bound)) + 3) }
	err := s.eachState(ctx, id, keys, grow, func(key string, value []byte, rev int64) error {
		// Room for the entry first: json.Compact appends to the buffer's
		// free space and would copy a value that does not fit.
		buf.Grow(len(key) + len(value) + 48)
		if !first {
			buf.WriteByte(',')
		}
		first = false
		// Keys passed the identifier rule ([A-Za-z0-9._-]): no escaping.
		buf.WriteByte('"')
		buf.WriteString(key)
		buf.WriteString(`":{"value":`)
		if err := json.Compact(buf, value); err != nil {
			return err
		}
		buf.WriteString(`,"revision":`)
		buf.Write(strconv.AppendInt(buf.AvailableBuffer(), rev, 10))
		buf.WriteByte('}')
		if int64(buf.Len()-len(dst)) > bound {
			return limitError(LimitStateBytes, bound)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	buf.WriteString("}\n")
	return buf.Bytes(), nil
}

// eachState calls fn with each entry (all, or those named in keys) in key
// order, inside one read; value is valid only during the call. grow, when
// set, is told first how many bytes the entries take (plus 48 each).
func (s *Service) eachState(ctx context.Context, id string, keys []string, grow func(int64),
	fn func(key string, value []byte, rev int64) error) error {
	if err := validID("session_id", id); err != nil {
		return err
	}
	if len(keys) > MaxStateKeysPerRead {
		return invalidf("keys", "at most %d keys", MaxStateKeysPerRead)
	}
	for _, k := range keys {
		if err := validID("keys", k); err != nil {
			return err
		}
	}
	ctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if _, err := readSession(tx, id); err != nil {
			return err
		}
		from := ` FROM session_state WHERE session_id = ?`
		args := []any{id}
		if keys != nil {
			if len(keys) == 0 {
				return nil
			}
			from += ` AND state_key IN ?`
			args = append(args, keys)
		}
		if grow != nil {
			d := sqlstore.Dialect(tx)
			var size int64
			q := `SELECT COALESCE(SUM(` + octets(d, "state_key") + ` + ` + octets(d, "value") + ` + 48), 0)` + from
			if err := tx.Raw(q, args...).Scan(&size).Error; err != nil {
				return err
			}
			grow(size)
		}
		rows, err := tx.Raw(`SELECT state_key, value, revision`+from+` ORDER BY state_key`, args...).Rows()
		if err != nil {
			return err
		}
		defer rows.Close()
		var (
			key   string
			value sql.RawBytes
			rev   int64
		)
		for rows.Next() {
			if err := rows.Scan(&key, &value, &rev); err != nil {
				return err
			}
			if err := fn(key, value, rev); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	return storeErr(err)
}
