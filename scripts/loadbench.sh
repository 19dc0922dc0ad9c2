#!/usr/bin/env bash
# End-to-end load benchmark: starts throwaway MariaDB and Redis
# (scripts/lib/services.sh), one promptd on them, and runs cmd/promptbench
# against it, each scenario beside its same-run reference.
#
#   ./scripts/loadbench.sh                      # all scenarios, 10 s each, 64 connections
#   DURATION=3s SCENARIOS=resolve,append ./scripts/loadbench.sh
#   SHORT=1 ./scripts/loadbench.sh               # the CI smoke run: 1 s each, 8 connections
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=lib/services.sh
. scripts/lib/services.sh

pid=""
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
	stop_services
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

DURATION=${DURATION:-10s}
CONNS=${CONNS:-64}
SCENARIOS=${SCENARIOS:-all}
if [ "${SHORT:-}" = 1 ]; then
	DURATION=1s
	CONNS=8
fi

start_services
bin=$(mktemp -d)
go build -o "$bin/promptd" ./cmd/promptd
go build -o "$bin/promptbench" ./cmd/promptbench

admin=bench-admin-$RANDOM$RANDOM$RANDOM
runtime=bench-runtime-$RANDOM$RANDOM$RANDOM
port=$(_svc_free_port "")
log=$bin/promptd.log
PROMPTD_ADDR=127.0.0.1:$port PROMPTD_MYSQL_DSN="$PROMPTD_TEST_MYSQL_DSN" PROMPTD_REDIS_URL="$PROMPTD_TEST_REDIS_URL" \
	PROMPTD_TOKENS="bench:admin:$admin,rt:runtime:$runtime" PROMPTD_LOG_LEVEL=warn PROMPTD_STREAMS_PER_TOKEN=1000 \
	"$bin/promptd" >"$log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
	sleep 0.1
done

echo "promptbench: promptd $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores, $(go version | cut -d' ' -f3), MariaDB + Redis on loopback"
echo "command: promptbench -scenario $SCENARIOS -duration $DURATION -conns $CONNS"
"$bin/promptbench" -url "http://127.0.0.1:$port" -admin-token "$admin" -runtime-token "$runtime" \
	-scenario "$SCENARIOS" -duration "$DURATION" -conns "$CONNS" \
	-mysql-dsn "$PROMPTD_TEST_MYSQL_DSN" -redis-url "$PROMPTD_TEST_REDIS_URL"
