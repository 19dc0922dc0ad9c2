// Package testenv gives tests in every promptd package the real servers they
// need: the shared Redis and MySQL/MariaDB started by ./scripts/test.sh, and
// private redis-server processes a test can pause, kill and restart.
//
// The shared servers are found through environment variables that
// scripts/test.sh exports:
//
//	PROMPTD_TEST_REDIS_URL       redis://127.0.0.1:<port>/0
//	PROMPTD_TEST_MYSQL_DSN       user:pass@tcp(127.0.0.1:<port>)/db?parseTime=true
//	PROMPTD_TEST_REDIS_SERVER    path of redis-server for StartRedis
//	PROMPTD_REQUIRE_INTEGRATION  "1": a missing server fails the test
//
// When a server is missing, the test is skipped with a hint to run
// ./scripts/test.sh, so `go test ./...` still works on a bare machine; with
// PROMPTD_REQUIRE_INTEGRATION=1, as in CI, it fails instead, so integration
// tests cannot silently skip.
//
// Tests share the Redis server: use keys unique to the test. Each MySQLDSN
// call gets a fresh database, dropped when the test ends.
package testenv
