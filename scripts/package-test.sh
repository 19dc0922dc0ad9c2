#!/usr/bin/env bash
# Builds promptd's installable artifacts, installs each into a fresh environment
# outside the repository and runs its quick start there against a real promptd:
#
#   release archive   scripts/release.sh --targets linux/<arch> (or, without that
#                     script or with PACKAGE_TEST_GO_BUILD=1, go build into a tarball
#                     of the same name), checksums verified, extracted; its promptd
#                     serves the test and its promptctl runs examples/quickstart/quickstart.sh
#   Python SDK        wheel and sdist (python3 -m build --no-isolation sdk/python),
#                     their contents checked, the wheel pip-installed (--no-index) into
#                     a venv; examples/quickstart/quickstart.py runs from a directory
#                     outside the repo and must import the installed copy
#   TypeScript SDK    npm ci && npm pack (prepack builds) in a copy of sdk/typescript,
#                     the tarball's file list checked, npm-installed into a new npm
#                     project; examples/quickstart/quickstart.mjs runs there and
#                     quickstart.ts is type-checked (tsc --strict), compiled and run
#
# Any failing step fails the script (non-zero). Each quick start's output is printed.
#
#   ./scripts/package-test.sh
#   PACKAGE_TEST_KEEP=1 ./scripts/package-test.sh   keep the temp dir (its path is printed)
#   PACKAGE_TEST_RELEASE_DIR=DIR ./scripts/package-test.sh   take the release archive from DIR
#                     (release-check.sh's RELEASE_CHECK_KEEP) instead of building one
#
# Needs go, curl, node and npm (Node 20+), Debian's python3 with python3-build,
# python3-setuptools, python3-wheel, python3-venv and python3-httpx (installed with
# apt-get when missing), the Go module proxy and the npm registry.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$PWD
# shellcheck source-path=SCRIPTDIR source=lib/services.sh
. scripts/lib/services.sh

# promptd and promptctl read PROMPTD_*: none of the caller's reach them.
for v in $(compgen -e | grep '^PROMPTD_' || true); do unset "$v"; done
# pip reads no configuration file (no index, no extra find-links) but its flags.
export PIP_CONFIG_FILE=/dev/null PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false

py=/usr/bin/python3
version=$(tr -d '[:space:]' <VERSION)
arch=$(go env GOARCH)
started=$SECONDS

tmp=$(mktemp -d "${TMPDIR:-/tmp}/promptd-package-test.XXXXXX")
case "$tmp/" in "$repo"/*) echo "package-test: temp dir $tmp is inside the repo" >&2; exit 1 ;; esac
server_pid=""
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [ -n "$server_pid" ]; then
		kill -TERM "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	if [ "${PACKAGE_TEST_KEEP:-}" = 1 ]; then
		echo "package-test: kept $tmp"
	else
		rm -rf "$tmp"
	fi
	if [ "$rc" = 0 ]; then
		printf '\npackage-test: ok (%ss)\n' "$((SECONDS - started))"
	else
		printf '\npackage-test: FAILED (exit %s, after %ss)\n' "$rc" "$((SECONDS - started))" >&2
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

section() { printf '\n=== %s (at %ss)\n' "$*" "$((SECONDS - started))"; }
fail() { echo "package-test: $*" >&2; exit 1; }
# expect FILE ERE...: each extended regexp matches a line of FILE.
expect() {
	local file=$1 re
	shift
	for re in "$@"; do
		grep -Eq -- "$re" "$file" || fail "$(basename "$file"): no line matches: $re"
	done
}

section "tools"
pkgs=()
for mod in build:python3-build setuptools:python3-setuptools wheel:python3-wheel httpx:python3-httpx mypy:python3-mypy; do
	"$py" -c "import ${mod%%:*}" 2>/dev/null || pkgs+=("${mod#*:}")
done
dpkg-query -W -f='${Status}' python3-venv 2>/dev/null | grep -q 'ok installed' || pkgs+=(python3-venv)
command -v npm >/dev/null || pkgs+=(nodejs npm)
command -v curl >/dev/null || pkgs+=(curl)
if [ ${#pkgs[@]} -gt 0 ]; then svc_apt_install "${pkgs[@]}"; fi
echo "go $(go env GOVERSION), node $(node --version), npm $(npm --version), $("$py" --version), curl $(curl --version | head -1 | cut -d' ' -f2)"
echo "version $version (VERSION), temp dir $tmp"

# --- The release archive -------------------------------------------------------
name=promptd_${version}_linux_${arch}
rel=$tmp/release
if [ -n "${PACKAGE_TEST_RELEASE_DIR:-}" ]; then
	section "release archive: the artifacts release-check.sh built from a clone of HEAD ($PACKAGE_TEST_RELEASE_DIR)"
	mkdir -p "$rel"
	cp -p "$PACKAGE_TEST_RELEASE_DIR/"* "$rel/"
elif [ -x scripts/release.sh ] && [ "${PACKAGE_TEST_GO_BUILD:-}" != 1 ]; then
	section "release archive: scripts/release.sh --targets linux/$arch"
	# --allow-dirty: the test runs on the work tree as it is (a release is cut from a commit).
	scripts/release.sh --allow-dirty --targets "linux/$arch" --out "$rel" >"$tmp/release.log" 2>&1 ||
		{ cat "$tmp/release.log" >&2; fail "scripts/release.sh failed"; }
	sed 's/^/  /' "$tmp/release.log"
else
	section "release archive: go build of ./cmd/promptd and ./cmd/promptctl (no scripts/release.sh, or PACKAGE_TEST_GO_BUILD=1)"
	mkdir -p "$rel" "$tmp/stage/$name"
	CGO_ENABLED=0 go build -trimpath -o "$tmp/stage/$name/" ./cmd/promptd ./cmd/promptctl
	cp LICENSE "$tmp/stage/$name/"
	tar -C "$tmp/stage" -czf "$rel/$name.tar.gz" "$name"
	(cd "$rel" && sha256sum -- "$name.tar.gz" >SHA256SUMS)
fi
[ -f "$rel/$name.tar.gz" ] || fail "no $name.tar.gz in $rel: $(ls "$rel")"
[ -f "$rel/SHA256SUMS" ] || fail "no SHA256SUMS beside $name.tar.gz"
grep -q " $name.tar.gz\$" "$rel/SHA256SUMS" || fail "SHA256SUMS does not list $name.tar.gz"
echo "\$ sha256sum -c SHA256SUMS"
(cd "$rel" && sha256sum -c SHA256SUMS)
mkdir -p "$tmp/install"
tar -C "$tmp/install" -xzf "$rel/$name.tar.gz"
bindir=$(dirname "$(find "$tmp/install" -type f -name promptd -perm -u+x | head -1)")
if ! [ -x "$bindir/promptd" ] || ! [ -x "$bindir/promptctl" ]; then fail "$name.tar.gz holds no executable promptd and promptctl"; fi
echo "extracted: $(cd "$tmp/install" && find . -type f | sort | tr '\n' ' ')"
"$bindir/promptd" version | tee "$tmp/promptd-version.txt"
expect "$tmp/promptd-version.txt" "$version"

section "promptd from the archive: embedded defaults (SQLite in a temp dir), bootstrap tokens, a free port"
rand() { od -An -N16 -tx1 /dev/urandom | tr -d ' \n'; }
admin_token=admin-$(rand) runtime_token=runtime-$(rand)
mkdir -p "$tmp/server"
(
	cd "$tmp/server"
	export PROMPTD_ADDR=127.0.0.1:0 PROMPTD_DATA_DIR=$tmp/server/data \
		PROMPTD_TOKENS="admin:admin:$admin_token,rt:runtime:$runtime_token"
	exec "$bindir/promptd"
) >"$tmp/promptd.log" 2>&1 </dev/null &
server_pid=$!
addr=""
for _ in $(seq 600); do
	addr=$(grep -m1 '"msg":"listening"' "$tmp/promptd.log" 2>/dev/null | grep -o '"addr":"[^"]*"' | cut -d'"' -f4 || true)
	[ -n "$addr" ] && break
	kill -0 "$server_pid" 2>/dev/null || { cat "$tmp/promptd.log" >&2; fail "promptd exited"; }
	sleep 0.1
done
[ -n "$addr" ] || { cat "$tmp/promptd.log" >&2; fail "promptd did not say it listens within 60s"; }
url=http://$addr
"$bindir/promptd" healthcheck --ready --url "$url" || { cat "$tmp/promptd.log" >&2; fail "promptd is not ready"; }
echo "promptd (pid $server_pid) ready at $url"

section "release quick start: examples/quickstart/quickstart.sh with the archive's promptctl and curl"
PATH="$bindir:$PATH" command -v promptctl | grep -qxF "$bindir/promptctl" || fail "promptctl on PATH is not the archive's"
(cd "$tmp" && PATH="$bindir:$PATH" PROMPTD_URL=$url PROMPTD_TOKEN=$admin_token PROMPTD_RUNTIME_TOKEN=$runtime_token \
	"$repo/examples/quickstart/quickstart.sh" hello) 2>&1 | tee "$tmp/release-quickstart.txt"
expect "$tmp/release-quickstart.txt" \
	"^promptctl $version" \
	'^hello +hello\.yaml +created +0 +1 ' \
	'^hello +prod +0 +1 +1 +switched' \
	'^\{"agent":"hello","env":"prod","version":1,.*"config":\{"system":"You are \{\{persona\}\}\."' \
	'"messages":\[\{"role":"system","content":"You are helpful\."\}\]'

# --- The Python SDK --------------------------------------------------------------
section "python: wheel and sdist (python3 -m build --no-isolation sdk/python)"
cmp LICENSE sdk/python/LICENSE || fail "sdk/python/LICENSE differs from LICENSE: cp LICENSE sdk/python/LICENSE"
"$py" -m build --no-isolation --outdir "$tmp/py-dist" sdk/python >"$tmp/py-build.log" 2>&1 ||
	{ cat "$tmp/py-build.log" >&2; fail "python3 -m build failed"; }
tail -1 "$tmp/py-build.log"
wheel=$tmp/py-dist/promptd-$version-py3-none-any.whl sdist=$tmp/py-dist/promptd-$version.tar.gz
if ! [ -f "$wheel" ] || ! [ -f "$sdist" ]; then fail "want $(basename "$wheel") and $(basename "$sdist"), got: $(ls "$tmp/py-dist")"; fi
"$py" - "$wheel" "$sdist" "$version" "$repo" <<'EOF'
import email.parser, pathlib, sys, tarfile, zipfile

wheel, sdist, version, repo = sys.argv[1:]
repo = pathlib.Path(repo)
license_text = (repo / "LICENSE").read_bytes()
modules = sorted(p.name for p in (repo / "sdk/python/src/promptd").glob("*.py"))
bad = []

with zipfile.ZipFile(wheel) as z:
    names = set(z.namelist())
    di = f"promptd-{version}.dist-info"
    meta = email.parser.Parser().parsestr(z.read(f"{di}/METADATA").decode())
    for m in modules + ["py.typed"]:
        if f"promptd/{m}" not in names:
            bad.append(f"wheel lacks promptd/{m}")
    extra = sorted(n for n in names if not (n.startswith("promptd/") or n.startswith(di + "/")))
    if extra:
        bad.append(f"wheel has files outside promptd/ and {di}/: {extra}")
    if any("test" in n.split("/")[-1] for n in names):
        bad.append("wheel ships tests: " + str(sorted(n for n in names if "test" in n)))
    if z.read(f"{di}/LICENSE") != license_text:
        bad.append(f"{di}/LICENSE is not the repository's LICENSE")
    if meta["Version"] != version:
        bad.append(f"wheel Version {meta['Version']!r}, VERSION {version!r}")
    if meta["License"] != "Apache-2.0":
        bad.append(f"wheel License {meta['License']!r}")
    if not any(r.startswith("httpx") for r in meta.get_all("Requires-Dist") or []):
        bad.append("wheel does not require httpx")
    print(f"wheel {pathlib.Path(wheel).name}: {len(names)} files; Name {meta['Name']}, Version {meta['Version']}, "
          f"License {meta['License']}, Requires-Dist {meta.get_all('Requires-Dist')}, Requires-Python {meta['Requires-Python']}")
    print("  " + " ".join(sorted(names)))

with tarfile.open(sdist) as t:
    top = f"promptd-{version}/"
    snames = set(t.getnames())
    for want in ["LICENSE", "README.md", "pyproject.toml", "PKG-INFO", "src/promptd/py.typed"] + [f"src/promptd/{m}" for m in modules]:
        if top + want not in snames:
            bad.append(f"sdist lacks {want}")
    f = t.extractfile(top + "LICENSE")
    if f is None or f.read() != license_text:
        bad.append("sdist LICENSE is not the repository's LICENSE")
    print(f"sdist {pathlib.Path(sdist).name}: {len([n for n in snames if t.getmember(n).isfile()])} files")

if bad:
    print("\n".join("package-test: " + b for b in bad), file=sys.stderr)
    sys.exit(1)
EOF

section "python: the wheel into a fresh venv (--system-site-packages for Debian's httpx), pip install --no-index"
venv=$tmp/venv
"$py" -m venv --system-site-packages "$venv"
if (cd "$tmp" && "$venv/bin/python" -c 'import promptd' 2>/dev/null); then
	fail "promptd is importable in the fresh venv before installing the wheel"
fi
"$venv/bin/pip" install --no-index "$wheel" 2>&1 | tail -2
# pip check over the venv sees Debian's own packages too: only promptd's line counts.
"$venv/bin/pip" check >"$tmp/pip-check.txt" 2>&1 || true
if grep -i '^promptd ' "$tmp/pip-check.txt"; then fail "pip check: promptd's requirements are not met"; fi
"$venv/bin/pip" show promptd | grep -E '^(Name|Version|Location|Requires):'
mkdir -p "$tmp/py-app"
cp examples/quickstart/quickstart.py "$tmp/py-app/"
# The check: promptd is imported from the venv's site-packages, not from a source tree.
cat >"$tmp/py-app/where.py" <<'EOF'
import os, sys
import promptd
where, venv = os.path.realpath(promptd.__file__), os.path.realpath(sys.argv[1])
print("promptd.__file__ =", where)
sys.exit(0 if where.startswith(venv + os.sep) else f"promptd is not imported from {venv}")
EOF
(cd "$tmp/py-app" && "$venv/bin/python" where.py "$venv")
echo "control: the same check with PYTHONPATH=sdk/python/src (the source tree) must fail:"
if (cd "$tmp/py-app" && PYTHONPATH=$repo/sdk/python/src "$venv/bin/python" where.py "$venv"); then
	fail "control: the __file__ check passed on the source tree; it cannot tell the wheel from the sources"
fi
echo "control: failed, as it must"

section "python quick start: examples/quickstart/quickstart.py in $tmp/py-app, the installed wheel"
(cd "$tmp/py-app" && PROMPTD_URL=$url PROMPTD_ADMIN_TOKEN=$admin_token PROMPTD_TOKEN=$runtime_token \
	"$venv/bin/python" quickstart.py) 2>&1 | tee "$tmp/py-quickstart.txt"
expect "$tmp/py-quickstart.txt" \
	"^promptd SDK $version \\(module $(realpath "$venv")/lib/python3[.0-9]*/site-packages/promptd/__init__\\.py\\)\$" \
	'^published quickstart-python version 1$' \
	'^quickstart-python/prod -> version 1 \(revision 1\)$' \
	"^resolved: version 1, pinned False, system 'You are \\{\\{persona\\}\\} for \\{\\{company\\}\\}\\.'\$" \
	"^assembled: \\[\\{'role': 'system', 'content': 'You are a support bot for ACME\\.'\\}\\]\$" \
	"^openai body: \\{'model': 'gpt-4o', 'temperature': 0\\.2, 'messages': \\[\\{'role': 'system', 'content': 'You are a support bot for ACME\\.'\\}\\]\\}\$" \
	'^refused: 422 missing_variable$'

section "python: mypy --strict of quickstart.py against the installed wheel (its py.typed)"
# mypy from Debian, run by the venv's python, so it sees the venv's site-packages:
# without py.typed in the wheel, --strict refuses the import.
(cd "$tmp/py-app" && "$venv/bin/python" -m mypy --strict --no-incremental quickstart.py)
printf 'import promptd\nc = promptd.Client("http://127.0.0.1:1", "t")\nv: str = c.resolve("a", "prod").version\n' >"$tmp/py-app/control.py"
echo "control: a misuse (an int assigned to a str) must fail mypy:"
if (cd "$tmp/py-app" && "$venv/bin/python" -m mypy --strict --no-incremental control.py); then
	fail "control: mypy accepted an int assigned to a str; the type check proves nothing"
fi
echo "control: mypy failed, as it must"

section "python: the sdist builds and installs too (pip install --no-index --no-build-isolation)"
"$py" -m venv --system-site-packages "$tmp/venv-sdist"
"$tmp/venv-sdist/bin/pip" install --no-index --no-build-isolation "$sdist" 2>&1 | tail -1
(cd "$tmp/py-app" && "$tmp/venv-sdist/bin/python" where.py "$tmp/venv-sdist")

# --- The TypeScript SDK ----------------------------------------------------------
section "typescript: npm ci && npm pack in a copy of sdk/typescript (prepack builds and copies LICENSE)"
# A copy, laid out as the repo is (prepack copies ../../LICENSE), so that the work
# tree's node_modules and dist are left as they are.
# Its tests' launcher, integrations/testkit (a file: devDependency the build
# compiles against; plain JavaScript, nothing to install), comes along.
mkdir -p "$tmp/ts-build/sdk/typescript" "$tmp/ts-build/integrations/testkit" "$tmp/ts-dist"
cp LICENSE "$tmp/ts-build/LICENSE"
for d in sdk/typescript integrations/testkit; do
	tar -C "$d" --exclude=./node_modules --exclude=./dist --exclude=./.typecheck --exclude='./*.tgz' -cf - . |
		tar -C "$tmp/ts-build/$d" -xf -
done
(cd "$tmp/ts-build/sdk/typescript" && npm ci --loglevel=error >/dev/null &&
	npm pack --json --pack-destination "$tmp/ts-dist" >"$tmp/ts-pack.json" 2>"$tmp/ts-pack.log") ||
	{ cat "$tmp/ts-pack.log" >&2; fail "npm ci / npm pack failed"; }
tgz=$tmp/ts-dist/promptd-client-$version.tgz
[ -f "$tgz" ] || fail "no $(basename "$tgz"): $(ls "$tmp/ts-dist")"
[ ! -e "$tmp/ts-build/sdk/typescript/LICENSE" ] || fail "postpack left sdk/typescript/LICENSE behind"
mkdir -p "$tmp/ts-unpacked"
tar -C "$tmp/ts-unpacked" -xzf "$tgz"
cmp LICENSE "$tmp/ts-unpacked/package/LICENSE" || fail "the tarball's LICENSE is not the repository's"
node - "$tmp/ts-pack.json" "$tmp/ts-unpacked/package" "$version" <<'EOF'
const fs = require("node:fs"), path = require("node:path");
const [packJson, dir, version] = process.argv.slice(2);
const [pack] = JSON.parse(fs.readFileSync(packJson, "utf8"));
const files = pack.files.map((f) => f.path).sort();
const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
const bad = [];
const allowed = [/^(LICENSE|README\.md|package\.json)$/, /^dist\/src\/[a-z0-9]+\.(js|d\.ts|js\.map)$/, /^src\/[a-z0-9]+\.ts$/];
for (const f of files) if (!allowed.some((re) => re.test(f))) bad.push(`ships ${f}`);
for (const f of files) if (/test|typecheck|bench|examples|eslint|tsconfig/.test(f)) bad.push(`ships ${f} (tests, checks or tooling)`);
for (const f of ["LICENSE", "README.md", "dist/src/index.js", "dist/src/index.d.ts"])
  if (!files.includes(f)) bad.push(`lacks ${f}`);
const srcTs = fs.readdirSync(path.join(dir, "src")).filter((f) => f.endsWith(".ts"));
for (const f of srcTs) {
  const base = f.replace(/\.ts$/, "");
  for (const ext of [".js", ".d.ts", ".js.map"]) if (!files.includes(`dist/src/${base}${ext}`)) bad.push(`lacks dist/src/${base}${ext}`);
}
if (pkg.version !== version) bad.push(`version ${pkg.version}, VERSION ${version}`);
if (pkg.license !== "Apache-2.0") bad.push(`license ${pkg.license}`);
const targets = [pkg.main, pkg.types];
for (const [sub, conds] of Object.entries(pkg.exports)) {
  if (typeof conds === "string") { targets.push(conds); continue; }
  if (Object.keys(conds)[0] !== "types") bad.push(`exports["${sub}"]: "types" must come first`);
  targets.push(...Object.values(conds));
}
for (const t of targets) if (!fs.existsSync(path.join(dir, t))) bad.push(`package.json names ${t}, not in the tarball`);
if (pack.files.some((f) => f.path === "package.json") && pkg.scripts?.prepack === undefined) bad.push("no prepack");
console.log(`${pack.filename}: ${files.length} files, ${pack.size} bytes packed, ${pack.unpackedSize} unpacked; ` +
  `main ${pkg.main}, types ${pkg.types}, exports ${Object.keys(pkg.exports).join(" ")}`);
console.log("  " + files.join(" "));
if (bad.length) { for (const b of bad) console.error("package-test: tarball " + b); process.exit(1); }
EOF

section "typescript: a new npm project in $tmp/ts-app, npm install the tarball, typescript@5.9.3, @types/node@20"
mkdir -p "$tmp/ts-app"
cp examples/quickstart/quickstart.mjs examples/quickstart/quickstart.ts examples/quickstart/tsconfig.json "$tmp/ts-app/"
(
	cd "$tmp/ts-app"
	npm init -y >/dev/null
	npm pkg set type=module
	npm install --loglevel=error "$tgz" typescript@5.9.3 @types/node@20.19.43
	npm ls --depth=0
) 2>&1 | sed 's/^/  /'
got=$(cd "$tmp/ts-app" && node --input-type=module -e 'console.log(import.meta.resolve("@promptd/client"))')
echo "@promptd/client resolves to $got"
case "$got" in "file://$tmp/ts-app/node_modules/@promptd/client/"*) ;; *) fail "@promptd/client does not resolve into the project's node_modules" ;; esac

section "typescript quick start (JS): examples/quickstart/quickstart.mjs in $tmp/ts-app"
(cd "$tmp/ts-app" && PROMPTD_URL=$url PROMPTD_ADMIN_TOKEN=$admin_token PROMPTD_TOKEN=$runtime_token \
	node quickstart.mjs) 2>&1 | tee "$tmp/ts-quickstart.txt"
expect "$tmp/ts-quickstart.txt" \
	"^@promptd/client $version \\(entry file://$tmp/ts-app/node_modules/@promptd/client/dist/src/index\\.js\\)\$" \
	'^published quickstart-node version 1$' \
	'^quickstart-node/prod -> version 1 \(revision 1\)$' \
	'^resolved: version 1, pinned false, system "You are \{\{persona\}\} for \{\{company\}\}\."$' \
	'^assembled: \[\{"role":"system","content":"You are a support bot for ACME\."\}\] Promptd-Version: quickstart-node/prod/1$' \
	'^openai body: \{"model":"gpt-4o","temperature":0\.2,"messages":\[\{"role":"system","content":"You are a support bot for ACME\."\}\]\}$' \
	'^refused: 422 missing_variable$'

section "typescript quick start (TS): tsc --strict -p . (skipLibCheck false: the published .d.ts are checked too), then run"
(cd "$tmp/ts-app" && npx tsc -p . && echo "tsc: quickstart.ts type-checks against @promptd/client's published types")
(cd "$tmp/ts-app" && PROMPTD_URL=$url PROMPTD_ADMIN_TOKEN=$admin_token PROMPTD_TOKEN=$runtime_token \
	node out/quickstart.js) 2>&1 | tee "$tmp/ts-quickstart-ts.txt"
expect "$tmp/ts-quickstart-ts.txt" \
	'^published quickstart-ts version 1$' \
	'^quickstart-ts/prod -> version 1 \(revision 1\)$' \
	'^assembled: system "You are a support bot for ACME\."$' \
	'^refused: 422 missing_variable$'

# The types are real (not any): each misuse below must be an error (an unused
# @ts-expect-error is one itself), and a misuse without the marker must fail tsc.
cat >"$tmp/ts-app/misuse.ts" <<'EOF'
import { Client, type Resolved } from "@promptd/client";
const rt = new Client({ baseUrl: "http://127.0.0.1:1", token: "t" });
declare const r: Resolved;
// @ts-expect-error: version is a number
export const s: string = r.version;
// @ts-expect-error: the request is an object
void rt.assemble("a", "prod", "u1");
// @ts-expect-error: no such method
void rt.noSuchMethod();
// @ts-expect-error: baseUrl and token are required
new Client({});
EOF
tsc_flags=(--noEmit --strict --skipLibCheck false --target es2022 --module nodenext --moduleResolution nodenext --types node)
(cd "$tmp/ts-app" && npx tsc "${tsc_flags[@]}" misuse.ts && echo "tsc: 4 misuses of the published API are type errors")
printf 'import type { Resolved } from "@promptd/client";\ndeclare const r: Resolved;\nexport const n: number = r.agent;\n' >"$tmp/ts-app/control.ts"
echo "control: a misuse without @ts-expect-error must fail tsc:"
if (cd "$tmp/ts-app" && npx tsc "${tsc_flags[@]}" control.ts); then
	fail "control: tsc accepted a string assigned to a number; the type check proves nothing"
fi
echo "control: tsc failed, as it must"
