#!/usr/bin/env bash
# Copy-paste report of the shipped code (Go, TypeScript, Python; tests,
# the test harness and benchmarks left out): jscpd, installed on first use
# into a cache directory. Prints the totals and each pair of places.
#   ./scripts/dupes.sh            # runs of 6 lines or more
#   MIN_LINES=10 ./scripts/dupes.sh
set -euo pipefail
cd "$(dirname "$0")/.."
version=5.3.2 # 5.4.x's Linux build is not served by the registry here
tools="${XDG_CACHE_HOME:-$HOME/.cache}/promptd-tools/jscpd-$version"
if [ ! -x "$tools/node_modules/.bin/jscpd" ]; then
	mkdir -p "$tools"
	npm i -E --prefix "$tools" --no-audit --no-fund "jscpd@$version" >/dev/null
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$tools/node_modules/.bin/jscpd" --min-lines "${MIN_LINES:-6}" --format go,typescript,python \
	--ignore "**/node_modules/**,**/*_test.go,**/test/**,**/tests/**,**/testdata/**,**/dist/**,internal/harness/**,bench/**" \
	--reporters json --output "$out" . >/dev/null
python3 - "$out/jscpd-report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
t = r["statistics"]["total"]
print(f"{t['clones']} duplicated pairs, {t['duplicatedLines']} of {t['lines']} lines ({t['percentage']:.2f} %)")
for d in sorted(r["duplicates"], key=lambda d: -d["lines"]):
    a, b = d["firstFile"], d["secondFile"]
    print(f"{d['lines']:4d}  {a['name']}:{a['start']}  ~  {b['name']}:{b['start']}")
PY
