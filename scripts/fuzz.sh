#!/usr/bin/env bash
# Every fuzz target of the module, one after another, for FUZZTIME each
# (default 2m). CI runs each for 5 s inside ./scripts/test.sh.
#
#   ./scripts/fuzz.sh
#   FUZZTIME=10m ./scripts/fuzz.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
for pkg in $(go list ./...); do
	for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		printf '\n=== %s %s (%s)\n' "$pkg" "$target" "${FUZZTIME:-2m}"
		./scripts/fuzz-one.sh "$pkg" "$target" "${FUZZTIME:-2m}"
	done
done
