#!/usr/bin/env bash
# The field report on agent batch imports, reproduced: starts throwaway
# MariaDB and Redis (scripts/lib/services.sh), one promptd on them, and runs
# `promptbench imports` against it: agents writing overlapping batches of
# one board's rows under (a) a global lease, (b) row leases with fences,
# (c) batch commit proofs, (d) intents + proofs, (e) nothing (the naive
# control, which must lose updates), beside the report's figures. It exits
# non-zero when (a)-(d) lost an acknowledged write or (e) lost none.
#
# promptd runs with PROMPTD_BOARD_MAX_RECORDS=200000: the board holds
# 100,000 rows, all non-terminal, which is the whole of the default limit
# (100,000 non-terminal records per board), so it is raised for headroom
# (and for ROWS up to 200,000).
#
#   ./scripts/importbench.sh                     # 100,000 rows, 64 agents, batches of 50, 20 s per strategy
#   DURATION=10s STRATEGIES=c,d,e ./scripts/importbench.sh
#   SHORT=1 ./scripts/importbench.sh              # the CI smoke run: 5,000 rows, 8 agents, 3 s per strategy
#
# ROWS, AGENTS, BATCH, DURATION, THINK, STRATEGIES and GRACE (how long after
# DURATION a batch still waiting for its lock, or retrying, is abandoned)
# size it. The whole run is seeding (about a minute for 100,000 rows on 2
# cores) plus, per strategy, DURATION, the batches in flight then (at most
# GRACE) and reading the board back.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=lib/services.sh
. scripts/lib/services.sh

pid=""
bin=""
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
	stop_services
	[ -n "$bin" ] && rm -rf "$bin"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

ROWS=${ROWS:-100000}
AGENTS=${AGENTS:-64}
BATCH=${BATCH:-50}
DURATION=${DURATION:-20s}
THINK=${THINK:-50ms}
GRACE=${GRACE:-30s}
STRATEGIES=${STRATEGIES:-a,b,c,d,e}
if [ "${SHORT:-}" = 1 ]; then
	ROWS=5000
	AGENTS=8
	DURATION=3s
	GRACE=10s
fi
MAX_RECORDS=200000

start_services
bin=$(mktemp -d)
go build -o "$bin/promptd" ./cmd/promptd
go build -o "$bin/promptbench" ./cmd/promptbench

admin=bench-admin-$RANDOM$RANDOM$RANDOM
runtime=bench-runtime-$RANDOM$RANDOM$RANDOM
port=$(_svc_free_port "")
log=$bin/promptd.log
PROMPTD_ADDR=127.0.0.1:$port PROMPTD_MYSQL_DSN="$PROMPTD_TEST_MYSQL_DSN" PROMPTD_REDIS_URL="$PROMPTD_TEST_REDIS_URL" \
	PROMPTD_TOKENS="bench:admin:$admin,rt:runtime:$runtime" PROMPTD_LOG_LEVEL=warn \
	PROMPTD_BOARD_MAX_RECORDS=$MAX_RECORDS \
	"$bin/promptd" >"$log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
	sleep 0.1
done

echo "importbench: promptd $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores (nproc), $(go version | cut -d' ' -f3), MariaDB + Redis on loopback"
echo "promptd: PROMPTD_BOARD_MAX_RECORDS=$MAX_RECORDS (the board's $ROWS rows; the default limit is 100,000 non-terminal records per board)"
echo "command: promptbench imports -strategies $STRATEGIES -rows $ROWS -agents $AGENTS -batch $BATCH -duration $DURATION -think $THINK -grace $GRACE"
rc=0
"$bin/promptbench" imports -url "http://127.0.0.1:$port" -admin-token "$admin" -runtime-token "$runtime" \
	-strategies "$STRATEGIES" -rows "$ROWS" -agents "$AGENTS" -batch "$BATCH" -duration "$DURATION" -think "$THINK" \
	-grace "$GRACE" -board-max-records "$MAX_RECORDS" -mysql-dsn "$PROMPTD_TEST_MYSQL_DSN" || rc=$?
if grep -q '"level":"ERROR"' "$log"; then
	echo "promptd logged $(grep -c '"level":"ERROR"' "$log") errors; the first 5:"
	grep -m 5 '"level":"ERROR"' "$log" || true
fi
exit "$rc"
