// Package e2e holds promptd's multi-process tests: several promptd
// processes on one MariaDB and one Redis, driven over HTTP, with faults
// injected by signals and restarts. The multi-instance tests run twice:
// on a private redis-server and on a private three-master Redis Cluster
// (PROMPTD_REDIS_CLUSTER). They need the servers of scripts/test.sh (or
// PROMPTD_TEST_* variables) and redis-server, redis-cli and mariadbd
// binaries for private instances.
package e2e
