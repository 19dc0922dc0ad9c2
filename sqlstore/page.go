package sqlstore

import "database/sql"

// ScanPage reads up to limit rows of rs (a query asked for limit+1) and
// stops early once the rows read pass maxBytes (at least one row): a page
// bounded in bytes as well as in rows. scan reads the current row and
// says its size. full reports that more rows may follow. rs is closed.
func ScanPage[T any](rs *sql.Rows, limit, maxBytes int, scan func(*sql.Rows) (T, int, error)) (page []T, full bool, err error) {
	defer rs.Close()
	bytes := 0
	for rs.Next() {
		if len(page) == limit || bytes > maxBytes {
			return page, true, nil
		}
		v, n, err := scan(rs)
		if err != nil {
			return nil, false, err
		}
		page, bytes = append(page, v), bytes+n
	}
	return page, false, rs.Err()
}
