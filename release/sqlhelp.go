package release

import (
	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

func forUpdate(tx *gorm.DB) string {
	if sqlstore.Dialect(tx) == sqlstore.MySQL {
		return " FOR UPDATE"
	}
	return ""
}
