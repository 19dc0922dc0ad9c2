#!/usr/bin/env bash
# Builds the docs site (mkdocs.yml, docs/) with mkdocs --strict, so a broken
# link or a page missing from the nav fails the build.
#
#   ./scripts/docs.sh                 # build into $DOCS_SITE_DIR (default: a temp dir)
#   ./scripts/docs.sh serve           # the same site, served on 127.0.0.1:8000
#
# Installs Debian's mkdocs and mkdocs-material with apt-get when missing
# (scripts/lib/services.sh's svc_apt_install). The rendered API reference
# (reference/api.html) is made from api/openapi.yaml with @redocly/cli
# build-docs (from npm, pinned as in scripts/openapi-check.sh) at build time:
# docs/ is copied into a temp dir with the generated page beside it, and
# mkdocs runs on that copy through a config that inherits mkdocs.yml, so
# nothing is written into the repository.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$PWD

REDOCLY=@redocly/cli@2.77.0
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true
cache=${DOCS_CACHE:-${TMPDIR:-/tmp}/promptd-docs-tools}

# shellcheck source=lib/services.sh
. scripts/lib/services.sh

if ! command -v mkdocs >/dev/null || [ ! -d /usr/share/mkdocs/themes/material ]; then
	svc_apt_install mkdocs mkdocs-material
fi
command -v npm >/dev/null || { echo "docs: npm is required (for $REDOCLY)" >&2; exit 1; }

if [ ! -f "$cache/.installed" ] || [ "$(cat "$cache/.installed")" != "$REDOCLY" ]; then
	mkdir -p "$cache"
	echo '{"private": true}' >"$cache/package.json"
	(cd "$cache" && npm install --no-audit --no-fund --loglevel=error "$REDOCLY")
	echo "$REDOCLY" >"$cache/.installed"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/promptd-docs.XXXXXX")
trap 'rm -rf "$work"' EXIT
site=${DOCS_SITE_DIR:-$work/site}

cp -r docs "$work/docs"
mkdir -p "$work/docs/reference"
"$cache/node_modules/.bin/redocly" build-docs api/openapi.yaml \
	--output "$work/docs/reference/api.html" --title "promptd HTTP API reference"

cat >"$work/mkdocs.yml" <<YAML
INHERIT: $repo/mkdocs.yml
docs_dir: $work/docs
site_dir: $site
YAML

if [ "${1:-}" = serve ]; then
	mkdocs serve -f "$work/mkdocs.yml"
	exit
fi
mkdocs build --strict -f "$work/mkdocs.yml"
echo "docs: site built in $site"
