#!/usr/bin/env bash
# Memory under concurrency: builds promptd and cmd/promptbench, and runs
# `promptbench memory` against a fresh embedded promptd (SQLite in a
# temporary data directory, restarted before each phase), then prints its
# markdown table. With BASE, promptd is also built at that commit (in a
# temporary git worktree) and measured the same way, by the same
# promptbench; the table then has before and after columns.
#
#   ./scripts/membench.sh
#   BASE=fdb9668 ./scripts/membench.sh
#   DURATION=3s ARGS='-records 200' ./scripts/membench.sh
#   SHORT=1 ./scripts/membench.sh      # a smoke run: small sizes, 1 s phases (9 s of CPU)
#
# Environment:
#   BASE      a commit to measure beside HEAD (default: HEAD only)
#   DURATION  length of each timed phase (default 5s)
#   ARGS      further promptbench memory flags (-agents, -config-bytes, -many, ...)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

tmp=$(mktemp -d -t promptd-membench.XXXXXX)
base_tree=""
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [ -n "$base_tree" ]; then
		git worktree remove --force "$base_tree" 2>/dev/null || true
	fi
	rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

duration=${DURATION:-5s}
args=${ARGS:-}
if [ "${SHORT:-}" = 1 ]; then
	duration=1s
	args="-agents 3 -records 20 -many 8 -list-clients 3 $args"
fi
# shellcheck disable=SC2206 # word splitting of the extra flags is intended
extra=($args)

go build -o "$tmp/promptbench" ./cmd/promptbench
go build -o "$tmp/promptd-after" ./cmd/promptd
after=$(git rev-parse --short HEAD)
if [ -n "${BASE:-}" ]; then
	before=$(git rev-parse --short "$BASE")
	base_tree=$tmp/base
	git worktree add --detach --quiet "$base_tree" "$BASE"
	(cd "$base_tree" && go build -o "$tmp/promptd-before" ./cmd/promptd)
fi

run() { # run <label> <promptd binary> <output file>
	printf '[membench] %s: promptbench memory -duration %s %s\n' "$1" "$duration" "${extra[*]}" >&2
	"$tmp/promptbench" memory -promptd "$2" -duration "$duration" "${extra[@]}" >"$3"
}

echo "- promptd embedded (SQLite), default configuration, restarted before each phase; $(nproc) cores, $(go version | cut -d' ' -f3)"
echo "- load average before: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
if [ -z "${BASE:-}" ]; then
	run "$after" "$tmp/promptd-after" "$tmp/after.md"
	echo "- load average at the end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
	echo
	cat "$tmp/after.md"
	exit 0
fi
run "$before (before)" "$tmp/promptd-before" "$tmp/before.md"
run "$after (after)" "$tmp/promptd-after" "$tmp/after.md"
echo "- load average at the end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
echo
# Join the two tables on their measure column (promptbench prints the same
# rows for the same flags).
awk -F' \\| ' -v before="$before" -v after="$after" '
	FNR == NR { if (FNR > 2) { m = substr($1, 3); v[m] = $2 } next }
	FNR == 1 { printf "| measure | before (%s) | after (%s) | target |\n|---|---|---|---|\n", before, after; next }
	FNR == 2 { next }
	{ m = substr($1, 3); t = $3; sub(/ ?\|$/, "", t); printf "| %s | %s | %s | %s |\n", m, (m in v ? v[m] : "-"), $2, t }
' "$tmp/before.md" "$tmp/after.md"
