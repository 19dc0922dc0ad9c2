#!/usr/bin/env bash
# Fuzzes one target for a duration: scripts/fuzz-one.sh PKG TARGET FUZZTIME
#
# Go 1.26's fuzzing coordinator can end a run at its -fuzztime deadline
# with a bare "context deadline exceeded" failure while a worker is still
# in its last call (golang/go#75804, fixed in Go 1.27): no input failed,
# none was written. Such a run is tried once more; a failure with a
# failing input written, a panic, or a second bare deadline fails.
set -uo pipefail
pkg=$1 target=$2 fuzztime=$3
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for try in 1 2; do
	go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" 2>&1 | tee "$out"
	rc=${PIPESTATUS[0]}
	[ "$rc" -eq 0 ] && exit 0
	if [ "$try" -eq 1 ] && grep -q 'context deadline exceeded' "$out" &&
		! grep -q -e 'Failing input written' -e 'panic:' "$out"; then
		echo "fuzz-one: $target ended at its deadline with no failing input (golang/go#75804); running it once more"
		continue
	fi
	exit "$rc"
done
