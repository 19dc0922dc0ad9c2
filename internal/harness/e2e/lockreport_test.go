package e2e

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
)

// mustReportingLocks is must for a write that another (stopped) node's
// open transaction could block: when the answer takes longer than 2 s it
// logs the server's open transactions and lock waits, so that a failure
// names who held what.
func mustReportingLocks(t *testing.T, dsn string, want int, method, url, token string, body any, hdr ...string) resp {
	t.Helper()
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			t.Logf("%s %s has waited 2 s; the database's transactions:\n%s", method, url, lockReport(dsn))
		}
	}()
	defer close(done)
	return must(t, want, method, url, token, body, hdr...)
}

// lockReport lists the InnoDB transactions and lock waits of the server.
func lockReport(dsn string) string {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return err.Error()
	}
	defer db.Close()
	var b strings.Builder
	for _, q := range []string{
		`SELECT trx_id, trx_state, trx_started, trx_mysql_thread_id, COALESCE(trx_query, ''), trx_rows_locked, trx_tables_locked FROM information_schema.INNODB_TRX`,
		`SELECT lock_trx_id, lock_mode, lock_type, lock_table, COALESCE(lock_index, ''), COALESCE(lock_data, '') FROM information_schema.INNODB_LOCKS`,
		`SELECT requesting_trx_id, blocking_trx_id FROM information_schema.INNODB_LOCK_WAITS`,
	} {
		rows, err := db.Query(q)
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", q, err)
			continue
		}
		cols, _ := rows.Columns()
		fmt.Fprintf(&b, "%s\n", strings.Join(cols, " | "))
		for rows.Next() {
			vals := make([]sql.RawBytes, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				break
			}
			parts := make([]string, len(vals))
			for i, v := range vals {
				parts[i] = string(v)
			}
			fmt.Fprintf(&b, "  %s\n", strings.Join(parts, " | "))
		}
		rows.Close()
	}
	return b.String()
}
