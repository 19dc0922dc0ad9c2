#!/usr/bin/env bash
# Builds the docs site (mkdocs.yml, docs/) with mkdocs --strict, so a broken
# link, or a nav entry naming a page that does not exist, fails the build; then
# checks every #anchor the pages link to.
#
#   ./scripts/docs.sh                 # build into $DOCS_SITE_DIR (default:
#                                     # $TMPDIR/promptd-docs-site, outside the repo)
#   ./scripts/docs.sh serve           # the same site on 127.0.0.1:8000 (a copy made at
#                                     # start: run it again to see later edits)
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
site=${DOCS_SITE_DIR:-${TMPDIR:-/tmp}/promptd-docs-site}

cp -r docs "$work/docs"
mkdir -p "$work/docs/reference"
"$cache/node_modules/.bin/redocly" build-docs api/openapi.yaml \
	--output "$work/docs/reference/api.html" --title "promptd HTTP API reference"
# The page is prerendered, and hydrated by Redoc's bundle, which it loads from a
# CDN: serve the copy the pinned CLI ships beside it instead, so the site works
# offline. Any other remote script or style left in it fails the build.
cp "$cache/node_modules/@redocly/cli/lib/chunks/redoc.standalone.js" "$work/docs/reference/"
/usr/bin/python3 - "$work/docs/reference/api.html" <<'PY'
import re, sys
path = sys.argv[1]
html = open(path, encoding="utf-8").read()
html, n = re.subn(r'https://cdn\.redocly\.com/redoc/v[^"]*/bundles/redoc\.standalone\.js"(\s+integrity="[^"]*")?(\s+crossorigin="[^"]*")?',
                  'redoc.standalone.js"', html)
remote = re.findall(r'<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)="(https?://[^"]*)"|from "(https?://[^"]*)"|url\((https?://[^)]*)\)', html)
if n == 0 or remote:
    sys.exit(f"docs: {path}: Redoc bundle references rewritten: {n}; remote references left: {remote}")
open(path, "w", encoding="utf-8").write(html)
PY

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

# mkdocs 1.4 checks that linked pages exist, not their #anchors: check those.
/usr/bin/python3 - "$site" <<'PY'
import html.parser, os, sys, urllib.parse
site = sys.argv[1]
ids, links = {}, []
class P(html.parser.HTMLParser):
    def __init__(self, page):
        super().__init__(); self.page = page
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a: ids.setdefault(self.page, set()).add(a["id"])
        if tag == "a" and "href" in a: links.append((self.page, a["href"]))
for root, _, files in os.walk(site):
    for f in files:
        if f.endswith(".html") and not root.endswith("reference"):
            page = os.path.relpath(os.path.join(root, f), site)
            P(page).feed(open(os.path.join(root, f), encoding="utf-8").read())
bad = []
for page, href in links:
    u = urllib.parse.urlparse(href)
    if u.scheme or u.netloc or not u.fragment:
        continue
    target = os.path.normpath(os.path.join(os.path.dirname(page), u.path)) if u.path else page
    if target.startswith("reference"):
        continue
    if u.fragment not in ids.get(target, set()):
        bad.append(f"{page}: {href}")
if bad:
    sys.exit("docs: links to anchors that do not exist:\n  " + "\n  ".join(sorted(set(bad))))
print(f"docs: {len(links)} links checked, every #anchor exists")
PY
echo "docs: site built in $site"
