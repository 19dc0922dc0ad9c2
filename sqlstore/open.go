package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/glebarez/sqlite"
	"github.com/go-sql-driver/mysql"
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	gormlogger "gorm.io/gorm/logger"
	"gorm.io/plugin/dbresolver"
)

// Dialect names, as returned by Dialect.
const (
	MySQL  = "mysql"
	SQLite = "sqlite"
)

// Pool settings for MySQL. SQLite writes on one connection; reads outside
// a transaction go to a pool of sqliteReaders read-only connections (WAL
// lets readers run beside the writer), so one client's heavy reads never
// queue every other request behind them.
const (
	mysqlMaxOpenConns = 64
	// As many idle connections as open ones: with fewer, a burst that
	// uses them all closes the surplus as each request hands its
	// connection back, and the next burst dials them again (a TCP and
	// MySQL handshake each; about one request in ten under 64 concurrent
	// appends). Idle ones still close after mysqlConnMaxIdleTime.
	mysqlMaxIdleConns    = mysqlMaxOpenConns
	mysqlConnMaxLifetime = 5 * time.Minute
	mysqlConnMaxIdleTime = time.Minute
	mysqlDialTimeout     = 5 * time.Second

	// slowQuery is the duration above which a statement is logged.
	slowQuery = 200 * time.Millisecond

	// SQLiteReaders is the size of SQLite's read pool.
	SQLiteReaders = 4
)

// sqlitePragmas are applied to the SQLite connection when it opens.
// _txlock=immediate takes the write lock at BEGIN, so a transaction never
// fails half-way when it upgrades from reading to writing.
var sqlitePragmas = url.Values{
	"_pragma": {
		"journal_mode(WAL)",
		"busy_timeout(5000)",
		"foreign_keys(1)",
		"synchronous(NORMAL)",
	},
	"_txlock": {"immediate"},
}

// sqliteReadPragmas are the read pool's: it never writes.
var sqliteReadPragmas = url.Values{
	"_pragma": {
		"busy_timeout(5000)",
		"foreign_keys(1)",
		"query_only(1)",
	},
}

// readers holds each SQLite database's read pool, closed by Close.
var readers sync.Map // *sql.DB (the writer) -> *sql.DB (the readers)

// Config selects the database. MySQLDSN wins when set; otherwise SQLitePath
// is used.
type Config struct {
	// MySQLDSN is a go-sql-driver DSN (user:pw@tcp(host:3306)/db). Open adds
	// parseTime=true and clientFoundRows=true, and a 5s dial timeout when
	// none is given.
	MySQLDSN string
	// SQLitePath is the database file; its directory must exist.
	SQLitePath string
	// Logger receives slow queries (over SlowQuery) as warnings and gorm's
	// own warnings and errors; nil means slog.Default().
	Logger *slog.Logger
	// SlowQuery is the duration above which a statement is logged; zero
	// means 200ms.
	SlowQuery time.Duration
}

var recorderFilterOnce sync.Once

// Open connects to the configured database and checks that it answers
// within ctx.
func Open(ctx context.Context, cfg Config) (*gorm.DB, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	// Scan records its statement through gorm's recorder, whose filter
	// would otherwise put the values (prompt text, user ids) into the SQL
	// that a slow-query warning logs. Set once: it is a package variable.
	recorderFilterOnce.Do(func() {
		gormlogger.RecorderParamsFilter = func(_ context.Context, sql string, _ ...any) (string, []any) { return sql, nil }
	})
	gcfg := &gorm.Config{
		Logger:               newLogger(log, cmp.Or(cfg.SlowQuery, slowQuery)),
		NowFunc:              func() time.Time { return time.Now().UTC() },
		DisableAutomaticPing: true, // Open pings with ctx below
	}
	var (
		sqlDB     *sql.DB
		dialector gorm.Dialector
	)
	switch {
	case cfg.MySQLDSN != "":
		mc, err := mysqlConfig(cfg.MySQLDSN, log)
		if err != nil {
			return nil, err
		}
		connector, err := mysql.NewConnector(mc)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: MySQL DSN: %w", err)
		}
		sqlDB = sql.OpenDB(connector)
		sqlDB.SetMaxOpenConns(mysqlMaxOpenConns)
		sqlDB.SetMaxIdleConns(mysqlMaxIdleConns)
		sqlDB.SetConnMaxLifetime(mysqlConnMaxLifetime)
		sqlDB.SetConnMaxIdleTime(mysqlConnMaxIdleTime)
		dialector = gormmysql.New(gormmysql.Config{Conn: sqlDB, DSNConfig: mc})
	case cfg.SQLitePath != "":
		if strings.ContainsRune(cfg.SQLitePath, '?') {
			return nil, fmt.Errorf("sqlstore: SQLite path %q must not contain '?'", cfg.SQLitePath)
		}
		var err error
		sqlDB, err = sql.Open(sqlite.DriverName, cfg.SQLitePath+"?"+sqlitePragmas.Encode())
		if err != nil {
			return nil, fmt.Errorf("sqlstore: open SQLite %s: %w", cfg.SQLitePath, err)
		}
		// One connection: writes serialise in process, and readers never
		// see SQLITE_BUSY from a writer of their own process.
		sqlDB.SetMaxOpenConns(1)
		sqlDB.SetMaxIdleConns(1)
		sqlDB.SetConnMaxLifetime(0)
		sqlDB.SetConnMaxIdleTime(0)
		dialector = &sqlite.Dialector{Conn: sqlDB}
	default:
		return nil, errors.New("sqlstore: neither MySQLDSN nor SQLitePath is set")
	}
	if err := sqlDB.PingContext(ctx); err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("sqlstore: connect: %w", Translate(err))
	}
	db, err := gorm.Open(dialector, gcfg)
	if err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("sqlstore: open: %w", Translate(err))
	}
	if cfg.MySQLDSN == "" && !inMemory(cfg.SQLitePath) {
		if err := addReadPool(ctx, db, sqlDB, cfg.SQLitePath); err != nil {
			_ = sqlDB.Close()
			return nil, err
		}
	}
	return db, nil
}

// inMemory: an in-memory SQLite database is private to its connection, so
// it has no read pool.
func inMemory(path string) bool {
	return path == ":memory:" || strings.HasPrefix(path, "file::memory:") || strings.Contains(path, "mode=memory")
}

// addReadPool routes db's reads outside a transaction to SQLiteReaders
// read-only connections to the same file (gorm's dbresolver): statements
// inside a transaction, writes and locking reads stay on the writer. A read
// that follows a committed write sees it (WAL readers see every commit
// before their read began).
func addReadPool(ctx context.Context, db *gorm.DB, writer *sql.DB, path string) error {
	r, err := sql.Open(sqlite.DriverName, path+"?"+sqliteReadPragmas.Encode())
	if err != nil {
		return fmt.Errorf("sqlstore: open SQLite readers %s: %w", path, err)
	}
	r.SetMaxOpenConns(SQLiteReaders)
	r.SetMaxIdleConns(SQLiteReaders)
	r.SetConnMaxLifetime(0)
	r.SetConnMaxIdleTime(0)
	if err := r.PingContext(ctx); err != nil {
		_ = r.Close()
		return fmt.Errorf("sqlstore: connect SQLite readers: %w", Translate(err))
	}
	if err := db.Use(dbresolver.Register(dbresolver.Config{Replicas: []gorm.Dialector{&sqlite.Dialector{Conn: r}}})); err != nil {
		_ = r.Close()
		return fmt.Errorf("sqlstore: SQLite read pool: %w", err)
	}
	readers.Store(writer, r)
	return nil
}

// mysqlConfig parses dsn and applies the settings promptd relies on.
func mysqlConfig(dsn string, log *slog.Logger) (*mysql.Config, error) {
	mc, err := mysql.ParseDSN(dsn)
	if err != nil {
		// The driver's parse errors never echo the DSN, so no password
		// leaks into logs.
		return nil, fmt.Errorf("sqlstore: MySQL DSN: %w", err)
	}
	mc.ParseTime = true
	// Rows affected counts matched rows, as in SQLite: a conditional
	// UPDATE that matches but changes nothing is not a conflict.
	mc.ClientFoundRows = true
	if mc.Timeout == 0 {
		mc.Timeout = mysqlDialTimeout
	}
	// The driver's own messages (broken packets, ...) go to slog, not to
	// its default stderr logger.
	mc.Logger = slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	return mc, nil
}

// Dialect reports which database db talks to: MySQL or SQLite.
func Dialect(db *gorm.DB) string {
	if db == nil || db.Dialector == nil {
		return ""
	}
	return db.Dialector.Name()
}

// ForUpdate is the locking clause a read inside a write transaction needs
// on MySQL (" FOR UPDATE"); SQLite's one writer needs none ("").
func ForUpdate(db *gorm.DB) string {
	if Dialect(db) == MySQL {
		return " FOR UPDATE"
	}
	return ""
}

// Close closes the connection pool under db (and SQLite's read pool).
func Close(db *gorm.DB) error {
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	if r, ok := readers.LoadAndDelete(sqlDB); ok {
		_ = r.(*sql.DB).Close()
	}
	return sqlDB.Close()
}

// Ping checks that the database answers within ctx; the error is
// translated (ErrUnavailable when it cannot be reached).
func Ping(ctx context.Context, db *gorm.DB) error {
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	return Translate(sqlDB.PingContext(ctx))
}
