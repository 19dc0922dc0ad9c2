package sqlstore_test

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/promptd/promptd/sqlstore"
)

// A slow Raw(...).Scan is logged with placeholders, never its values
// (every statement is "slow" here: the threshold is a nanosecond).
func TestLogger_slowScan_logsNoValues(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	db, err := sqlstore.Open(context.Background(), sqlstore.Config{SQLitePath: filepath.Join(t.TempDir(), "l.db"), Logger: log, SlowQuery: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	defer sqlstore.Close(db)
	var n int
	// A recursive CTE slow enough (> 200ms) to be logged.
	err = db.Raw(`WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?) SELECT COUNT(*) FROM c WHERE ? <> 'other'`,
		1000, "secret-value").Scan(&n).Error
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "slow SQL") {
		t.Fatalf("the statement was not logged as slow: %q", buf.String())
	}
	if strings.Contains(buf.String(), "secret-value") || strings.Contains(buf.String(), "1000") {
		t.Fatalf("values in the log: %s", buf.String())
	}
}
