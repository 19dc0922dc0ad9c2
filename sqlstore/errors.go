package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"syscall"

	gosqlite "github.com/glebarez/go-sqlite"
	"github.com/go-sql-driver/mysql"
	"gorm.io/gorm"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/promptd/promptd/problem"
)

// Sentinel errors returned (wrapped) by Translate; test with errors.Is.
var (
	// ErrUnavailable: the database could not be reached, dropped the
	// connection, or was too busy to answer (SQLite busy/locked, MySQL
	// lock wait timeout or deadlock, a read-only server during failover).
	// The failed statement did not take effect; roll the transaction back
	// and retry later.
	ErrUnavailable = problem.Unavailable("sqlstore: database unavailable", "sql",
		"the database is unavailable; nothing was changed; retry later")
	// ErrDuplicate: a unique or primary key rejected the row.
	ErrDuplicate = errors.New("sqlstore: duplicate key")
)

// MySQL server error numbers Translate knows.
const (
	mysqlDupEntry         = 1062 // ER_DUP_ENTRY
	mysqlDupEntryWithKey  = 1586 // ER_DUP_ENTRY_WITH_KEY_NAME
	mysqlTooManyConns     = 1040 // ER_CON_COUNT_ERROR
	mysqlServerShutdown   = 1053 // ER_SERVER_SHUTDOWN
	mysqlLockWaitTimeout  = 1205 // ER_LOCK_WAIT_TIMEOUT
	mysqlDeadlock         = 1213 // ER_LOCK_DEADLOCK
	mysqlReadOnlyOption   = 1290 // ER_OPTION_PREVENTS_STATEMENT (--read-only, during a failover)
	mysqlReadOnlyMode     = 1836 // ER_READ_ONLY_MODE
	mariadbConnKilled     = 1927 // ER_CONNECTION_KILLED
	mysqlQueryInterrupted = 1317 // ER_QUERY_INTERRUPTED (server shutting down or KILL QUERY)
)

// Translate maps driver errors to the package's sentinels, keeping the
// original error in the chain (errors.Is finds both the sentinel and the
// cause; the text names both, for logs). Errors it does not recognise are
// returned unchanged, and nil stays nil.
//
// Every check is typed: *mysql.MySQLError numbers, the go-sql-driver and
// database/sql sentinels, net.Error and syscall errnos, and the
// *gosqlite.Error result codes of the glebarez (modernc) SQLite driver,
// which carries SQLite's extended result codes. No error text is parsed.
func Translate(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrUnavailable), errors.Is(err, ErrDuplicate):
		return err
	case isDuplicate(err):
		return fmt.Errorf("%w: %w", ErrDuplicate, err)
	case isUnavailable(err):
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// Err maps an infrastructure error that reached a domain boundary:
// driver errors are translated, and an unreachable or stalled database (a
// SQL deadline passed) is ErrUnavailable. Domain errors pass unchanged.
func Err(err error) error {
	err = Translate(err)
	if err == nil || errors.Is(err, ErrUnavailable) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return errors.Join(ErrUnavailable, err)
	}
	return err
}

// IsUnavailable reports whether err means the database could not be used
// right now (see ErrUnavailable).
func IsUnavailable(err error) bool { return errors.Is(Translate(err), ErrUnavailable) }

// IsDuplicate reports whether err is a unique or primary key violation.
func IsDuplicate(err error) bool { return errors.Is(Translate(err), ErrDuplicate) }

func isDuplicate(err error) bool {
	if errors.Is(err, gorm.ErrDuplicatedKey) { // gorm's TranslateError, if enabled
		return true
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number == mysqlDupEntry || me.Number == mysqlDupEntryWithKey
	}
	var se *gosqlite.Error
	if errors.As(err, &se) {
		c := se.Code()
		return c == sqlite3.SQLITE_CONSTRAINT_UNIQUE || c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	return false
}

func isUnavailable(err error) bool {
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) ||
		errors.Is(err, sql.ErrConnDone) {
		return true
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case mysqlTooManyConns, mysqlServerShutdown, mysqlLockWaitTimeout, mysqlDeadlock,
			mysqlReadOnlyOption, mysqlReadOnlyMode, mariadbConnKilled, mysqlQueryInterrupted:
			return true
		}
		return false
	}
	var se *gosqlite.Error
	if errors.As(err, &se) {
		// The low byte is the primary result code (SQLITE_BUSY_SNAPSHOT,
		// SQLITE_LOCKED_SHAREDCACHE, ... are extended codes of these).
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return true
		}
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE)
}
