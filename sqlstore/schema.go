package sqlstore

import "fmt"

// IDColumnType is the column type of identifiers (agent, env, session id,
// state keys: up to 128 characters) in dialect: case-sensitive, compared
// byte for byte, like the Redis keys they become.
func IDColumnType(dialect string) string { return KeyColumnType(dialect, 128) }

// KeyColumnType is a case-sensitive string column of up to n characters,
// usable in primary and unique keys (lease resource names: 256). On MySQL
// it is VARCHAR(n) with utf8mb4_bin, whatever the database's default
// collation; SQLite compares TEXT with BINARY unless told otherwise.
func KeyColumnType(dialect string, n int) string {
	if dialect == MySQL {
		return fmt.Sprintf("VARCHAR(%d) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin", n)
	}
	return "TEXT"
}

// TableOptions is the suffix of CREATE TABLE for dialect: InnoDB, utf8mb4
// and a binary default collation on MySQL (so a column declared without
// KeyColumnType is still case-sensitive), nothing on SQLite.
func TableOptions(dialect string) string {
	if dialect == MySQL {
		return " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
	}
	return ""
}
