// Package e2e holds promptd's multi-process tests: several promptd
// processes on one MariaDB and one Redis, driven over HTTP, with faults
// injected by signals and restarts. They need the servers of
// scripts/test.sh (or PROMPTD_TEST_* variables) and redis-server/mariadbd
// binaries for private instances.
package e2e
