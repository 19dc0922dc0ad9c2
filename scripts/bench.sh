#!/usr/bin/env bash
# Lock benchmarks (bench/locks_bench_test.go) against a throwaway
# redis-server, then a markdown table of the results (bench/cmd/benchtable).
#
#   ./scripts/bench.sh
#   BENCH='impl=promptd/' BENCHTIME=5s COUNT=3 ./scripts/bench.sh
#
# Environment:
#   BENCH      -bench pattern                     (default .)
#   BENCHTIME  -benchtime                         (default 2s)
#   COUNT      rounds of the whole suite; the table shows medians (default 1).
#              Each round is its own `go test -count 1`, so the implementations
#              interleave in time and a burst of load elsewhere on the machine
#              does not land on one implementation only (go test -count N
#              would repeat each benchmark N times back to back).
#   BENCH_OUT  file for the raw go test output    (default a new /tmp file)
#   GOFLAGS_BENCH  extra go test flags
#   BENCH_PKGS     packages (default ./...); profiling needs one package:
#                  BENCH_PKGS=. GOFLAGS_BENCH='-cpuprofile /tmp/cpu.out' BENCH='impl=promptd/'
#
# scripts/lib/services.sh starts Redis and MariaDB together; only Redis is
# used here. Both are stopped on exit, whatever the outcome.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=lib/services.sh
. scripts/lib/services.sh

child=""
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [ -n "$child" ]; then
		kill -TERM -- "-$child" 2>/dev/null || true
		wait "$child" 2>/dev/null || true
	fi
	stop_services
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

out=${BENCH_OUT:-$(mktemp -t promptd-bench.XXXXXX.txt)}

start_services
printf '[bench] load average before: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)" >&2

count=${COUNT:-1}
cmd=(go test -run '^$' -bench "${BENCH:-.}" -benchtime "${BENCHTIME:-2s}"
	-count 1 -timeout 60m)
# shellcheck disable=SC2206 # word splitting of the extra flags is intended
extra=(${GOFLAGS_BENCH:-})
pkgs=${BENCH_PKGS:-./...}
printf '[bench] %s round(s) of: cd bench && %s %s %s | tee -a %s\n' \
	"$count" "${cmd[*]}" "${extra[*]}" "$pkgs" "$out" >&2

: >"$out"
for ((round = 1; round <= count; round++)); do
	if [ "$count" -gt 1 ]; then
		printf '[bench] round %d of %d\n' "$round" "$count" >&2
	fi
	# In its own process group, so INT or TERM stops go test and its test
	# binary before the servers go away.
	set -m
	(cd bench && "${cmd[@]}" "${extra[@]}" "$pkgs" </dev/null | tee -a "$out") &
	child=$!
	set +m
	rc=0
	wait "$child" || rc=$?
	child=""
	[ "$rc" -eq 0 ] || exit "$rc"
done

echo
printf -- '- cores: %s (nproc); CPU: %s\n' "$(nproc)" \
	"$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n1)"
printf -- '- %s; %s\n' "$(go version)" "$(redis-server --version | cut -d' ' -f1-3)"
printf -- '- load average at the end: %s\n\n' "$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
(cd bench && go run ./cmd/benchtable) <"$out"
printf '\n[bench] raw output: %s\n' "$out" >&2
