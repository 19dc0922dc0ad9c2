#!/usr/bin/env bash
# Lints api/openapi.yaml with real OpenAPI tools and checks that the
# TypeScript types generated from it accept real request and response bodies.
#
#   ./scripts/openapi-check.sh
#
# Steps (the first failing one sets the exit code):
#   1. redocly lint                         0 errors
#   2. spectral lint (spectral:oas)         0 errors
#   3. openapi-typescript -> schema.d.ts, then tsc --strict --noEmit over
#      api/testdata/openapi/*.ts, which assign the HTTP contract's (api/openapi.yaml) example bodies to the
#      generated types (and expect errors for bodies that are wrong)
#
# The tools come from the npm registry, pinned below, installed once into
# $OPENAPI_CHECK_CACHE (default: $TMPDIR/promptd-openapi-check). Needs node
# and npm.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

REDOCLY=@redocly/cli@2.77.0
SPECTRAL=@stoplight/spectral-cli@6.16.3
OPENAPI_TS=openapi-typescript@7.13.0
TYPESCRIPT=typescript@5.9.3

cache=${OPENAPI_CHECK_CACHE:-${TMPDIR:-/tmp}/promptd-openapi-check}
spec=api/openapi.yaml
fixtures=api/testdata/openapi

for tool in node npm; do
	command -v "$tool" >/dev/null || { echo "openapi-check: $tool is required" >&2; exit 1; }
done

# install puts the pinned tools into the cache, once per set of versions.
install() {
	local want="$REDOCLY $SPECTRAL $OPENAPI_TS $TYPESCRIPT"
	if [ -f "$cache/.installed" ] && [ "$(cat "$cache/.installed")" = "$want" ]; then
		return
	fi
	mkdir -p "$cache"
	echo '{"private": true}' >"$cache/package.json"
	# shellcheck disable=SC2086 # the list is word-split on purpose
	(cd "$cache" && npm install --no-audit --no-fund --loglevel=error $want)
	echo "$want" >"$cache/.installed"
}

section() { printf '\n=== %s\n' "$*"; }

section "install ($cache)"
install
bin=$cache/node_modules/.bin
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

rc=0
section "redocly lint"
"$bin/redocly" lint "$spec" || rc=1

section "spectral lint (spectral:oas)"
printf 'extends: ["spectral:oas"]\n' >"$work/.spectral.yaml"
"$bin/spectral" lint --fail-severity=error -r "$work/.spectral.yaml" "$spec" || rc=1

section "openapi-typescript + tsc --strict"
"$bin/openapi-typescript" "$spec" -o "$work/schema.d.ts"
cp "$fixtures"/*.ts "$work/"
cat >"$work/tsconfig.json" <<'EOF'
{
  "compilerOptions": {
    "strict": true,
    "noEmit": true,
    "target": "es2022",
    "module": "esnext",
    "moduleResolution": "bundler",
    "noUncheckedIndexedAccess": true,
    "exactOptionalPropertyTypes": true,
    "skipLibCheck": false,
    "types": []
  },
  "include": ["*.ts"]
}
EOF
if (cd "$work" && "$bin/tsc" -p tsconfig.json --strict --noEmit); then
	echo "tsc: the bodies type-check"
else
	rc=1
fi

exit "$rc"
