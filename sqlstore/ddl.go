package sqlstore

import (
	"strings"

	"gorm.io/gorm"
)

// Table describes a table for CreateTable: columns as SQL fragments,
// the primary key, and secondary indexes by name.
type Table struct {
	Name    string
	Columns []string
	Primary []string          // empty when a column is an AUTO id
	Indexes map[string]string // name -> "col1, col2"
	Unique  map[string]string // name -> "col1, col2"
}

// AutoID is the column fragment of an auto-increment primary key "id".
func AutoID(dialect string) string {
	if dialect == MySQL {
		return "id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY"
	}
	return "id INTEGER PRIMARY KEY AUTOINCREMENT"
}

// LongText is a column type for documents up to a few MiB.
func LongText(dialect string) string {
	if dialect == MySQL {
		return "LONGTEXT"
	}
	return "TEXT"
}

// CreateTable creates t if it does not exist, with its indexes, in a form
// that can run twice: MySQL has no CREATE INDEX IF NOT EXISTS, so indexes
// are declared inline there; SQLite creates them separately.
func CreateTable(tx *gorm.DB, t Table) error {
	d := Dialect(tx)
	parts := append([]string(nil), t.Columns...)
	if len(t.Primary) > 0 {
		parts = append(parts, "PRIMARY KEY ("+strings.Join(t.Primary, ", ")+")")
	}
	if d == MySQL {
		for name, cols := range t.Unique {
			parts = append(parts, "UNIQUE KEY "+name+" ("+cols+")")
		}
		for name, cols := range t.Indexes {
			parts = append(parts, "KEY "+name+" ("+cols+")")
		}
	}
	ddl := "CREATE TABLE IF NOT EXISTS " + t.Name + " (\n\t" + strings.Join(parts, ",\n\t") + "\n)" + TableOptions(d)
	if err := tx.Exec(ddl).Error; err != nil {
		return err
	}
	if d == MySQL {
		return nil
	}
	for name, cols := range t.Unique {
		if err := tx.Exec("CREATE UNIQUE INDEX IF NOT EXISTS " + name + " ON " + t.Name + " (" + cols + ")").Error; err != nil {
			return err
		}
	}
	for name, cols := range t.Indexes {
		if err := tx.Exec("CREATE INDEX IF NOT EXISTS " + name + " ON " + t.Name + " (" + cols + ")").Error; err != nil {
			return err
		}
	}
	return nil
}
