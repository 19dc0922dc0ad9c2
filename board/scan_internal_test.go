package board

import (
	"context"
	"reflect"
	"testing"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/internal/harness/testenv"
)

// The hot reads scan rows by position (recordRow.dest): the same row read
// through GORM's name-based scan gives the same record, nullable columns
// set and unset, on both dialects.
func TestRecordRow_positionalScan_matchesGORMsNamedScan(t *testing.T) {
	testenv.ForEachDialect(t, append(audit.Migrations(), Migrations()...), func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := New(Options{DB: db, Instance: "test"})
		if _, _, err := s.Create(ctx, "scan", RecordInput{ID: "plain", Payload: []byte(`{"n":1}`), Priority: 3}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Create(ctx, "scan", RecordInput{ID: "keyed", Payload: []byte(`"é\u0000x"`), DedupeKey: "k-1"}); err != nil {
			t.Fatal(err)
		}
		if c, err := s.ClaimOne(ctx, "scan", "keyed", ClaimInput{Holder: "w"}); err != nil || c == nil {
			t.Fatalf("claim: %v %v", c, err)
		}
		for _, id := range []string{"plain", "keyed"} {
			got, err := readRecord(db.WithContext(ctx), "scan", id, false)
			if err != nil {
				t.Fatal(err)
			}
			var want []recordRow
			if err := db.Raw(`SELECT `+recordCols+` FROM board_records WHERE board = ? AND id = ?`, "scan", id).Scan(&want).Error; err != nil || len(want) != 1 {
				t.Fatalf("GORM read: %v %v", want, err)
			}
			if !reflect.DeepEqual(*got, want[0]) {
				t.Errorf("%s: positional %+v\nnamed      %+v", id, *got, want[0])
			}
			if id == "keyed" && (got.ClaimExpiresAtMs == nil || got.DedupeKey == nil || got.Owner != "w") {
				t.Errorf("keyed: the claim's columns are not set: %+v", *got)
			}
			if id == "plain" && (got.ClaimExpiresAtMs != nil || got.DedupeKey != nil) {
				t.Errorf("plain: NULL columns read as set: %+v", *got)
			}
		}
		// The control: a destination list out of recordCols' order scans
		// a different record (the comparison above can fail).
		var r recordRow
		d := r.dest()
		d[3], d[4] = d[4], d[3] // state <-> owner
		if _, err := queryOne(db.WithContext(ctx), `SELECT `+recordCols+` FROM board_records WHERE board = 'scan' AND id = 'keyed'`, nil, d...); err != nil {
			t.Fatal(err)
		}
		if r.State != "w" {
			t.Errorf("swapped destinations: state %q, want the owner's value", r.State)
		}
	})
}
