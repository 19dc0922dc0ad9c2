package sqlstore

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestLogger_logsSlowStatementsWithoutValues(t *testing.T) {
	var buf bytes.Buffer
	l := newLogger(slog.New(slog.NewJSONHandler(&buf, nil)), 200*time.Millisecond)
	sql := func() (string, int64) { return "UPDATE t SET v = ? WHERE id = ?", 1 }

	l.Trace(context.Background(), time.Now(), sql, nil)
	if buf.Len() != 0 {
		t.Fatalf("a fast statement was logged: %s", buf.String())
	}
	l.Trace(context.Background(), time.Now().Add(-time.Second), sql, nil)
	if out := buf.String(); !strings.Contains(out, "slow SQL statement") || !strings.Contains(out, "WHERE id = ?") {
		t.Fatalf("slow statement log = %s", out)
	}
	if got, params := l.(interface {
		ParamsFilter(context.Context, string, ...any) (string, []any)
	}).ParamsFilter(context.Background(), "SELECT ?", "secret"); got != "SELECT ?" || params != nil {
		t.Fatalf("ParamsFilter kept the values: %q %v", got, params)
	}
}
