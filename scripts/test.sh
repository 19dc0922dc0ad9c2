#!/usr/bin/env bash
# The project's one test command; CI runs it on a fresh clone.
#
#   ./scripts/test.sh                    gofmt, go vet, docs, go test -race ./..., SDKs,
#                                        release, packages, deploy, bench smoke
#   ./scripts/test.sh -run Foo ./locks/  only go test -race, with these arguments
#
# It starts throwaway Redis and MariaDB servers (scripts/lib/services.sh),
# installing them with apt-get when missing, and stops them on exit, whatever
# the outcome. The exit code is that of the first failing step.
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

started=$SECONDS
section() { printf '\n=== %s (at %ss)\n' "$*" "$((SECONDS - started))"; }

# run runs a command in its own process group and waits for it, so that INT
# or TERM to this script stops the command and everything it started (go
# test's test binaries) before the servers go away.
run() {
	set -m
	"$@" </dev/null &
	child=$!
	set +m
	local rc=0
	wait "$child" || rc=$?
	child=""
	return "$rc"
}

section "services"
start_services
# The fault suite (internal/harness/e2e TestFaults) writes its table here.
export PROMPTD_FAULTS_REPORT=$PROMPTD_SERVICES_DIR/faults.md
print_faults() {
	if [ -s "$PROMPTD_FAULTS_REPORT" ]; then
		section "fault suite table"
		cat "$PROMPTD_FAULTS_REPORT"
	fi
}

# The console's browser suite (internal/harness/browsertest) drives Debian's
# chromium and injects axe-core from npm (its package-lock.json pins it).
prepare_browser_suite() {
	local pkgs=()
	if [ -z "${PROMPTD_TEST_CHROMIUM:-}" ] && ! command -v chromium >/dev/null && [ ! -x /usr/bin/chromium ]; then
		pkgs+=(chromium fonts-dejavu-core)
	fi
	command -v npm >/dev/null || pkgs+=(nodejs npm)
	if [ ${#pkgs[@]} -gt 0 ]; then svc_apt_install "${pkgs[@]}"; fi
	(cd internal/harness/browsertest && npm ci --no-audit --no-fund --loglevel=error)
}

if [ $# -gt 0 ]; then
	case " $* " in *browsertest*|*" ./... "*) prepare_browser_suite ;; esac
	section "go test -race $*"
	run go test -race -count=1 -timeout 25m "$@"
	print_faults
	exit 0
fi

section "gofmt"
unformatted=$(find . -name '*.go' -not -path './.git/*' -not -path '*/vendor/*' \
	-not -path '*/testdata/*' -print0 | xargs -0r gofmt -l)
if [ -n "$unformatted" ]; then
	printf 'gofmt would change these files:\n%s\n' "$unformatted" >&2
	exit 1
fi

section "go vet ./..."
run go vet ./...

section "openapi: redocly, spectral, generated TypeScript types (scripts/openapi-check.sh)"
run ./scripts/openapi-check.sh

section "docs site: mkdocs build --strict, anchors, the API reference rendered from api/openapi.yaml (scripts/docs.sh)"
run ./scripts/docs.sh

section "browser suite: the console in chromium, axe-core on every page (internal/harness/browsertest)"
prepare_browser_suite
run go test -race -count=1 -timeout 10m -v ./internal/harness/browsertest/

section "go test -race ./... (but the browser suite, run above)"
# shellcheck disable=SC2046 # one word per package
run go test -race -count=1 -timeout 25m $(go list ./... | grep -v '/internal/harness/browsertest$')
print_faults

section "allocation budgets of the hot paths (no -race: the race detector changes allocation counts; docs/performance.md)"
run go test -count=1 -timeout 5m -run TestAllocBudgets ./internal/harness/allocbudget/

section "fuzz: every target briefly (FUZZTIME=${FUZZTIME:-5s})"
for pkg in $(go list ./...); do
	for target in $(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
		run ./scripts/fuzz-one.sh "$pkg" "$target" "${FUZZTIME:-5s}"
	done
done

section "examples/embedded: promptd as a library from a module of its own"
run bash -c "cd examples/embedded && go vet ./... && go test -count=1 ./..."

section "docs walkthroughs (quick start, prompts as code): pasted in sequence against a fresh promptd (scripts/readme-walkthrough.sh)"
run ./scripts/readme-walkthrough.sh

section "sdk/python: mypy --strict, pyflakes, pytest against a real promptd"
python_pkgs=""
for mod in httpx:python3-httpx pytest:python3-pytest mypy:python3-mypy pyflakes:python3-pyflakes yaml:python3-yaml; do
	[ -x /usr/bin/python3 ] && /usr/bin/python3 -c "import ${mod%%:*}" 2>/dev/null || python_pkgs="$python_pkgs ${mod#*:}"
done
if [ -n "$python_pkgs" ]; then
	# shellcheck disable=SC2086 # one word per package
	{ apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $python_pkgs; } >/dev/null
fi
python_bin=$PROMPTD_SERVICES_DIR/promptd-py
run go build -o "$python_bin" ./cmd/promptd
run /usr/bin/python3 -m mypy --strict --cache-dir "$PROMPTD_SERVICES_DIR/mypy" sdk/python/src
run /usr/bin/python3 -m pyflakes sdk/python
run env PROMPTD_BIN="$python_bin" /usr/bin/python3 -m pytest -q -p no:cacheprovider sdk/python

section "sdk/typescript: npm ci, lint, tsc --strict, tests on a real promptd, openai type check"
run bash -c 'go build -o "$PROMPTD_SERVICES_DIR/promptd-ts" ./cmd/promptd &&
	cd sdk/typescript && npm ci --no-audit --no-fund --loglevel=error && npm run lint && npm run build &&
	export PROMPTD_BIN="$PROMPTD_SERVICES_DIR/promptd-ts" && npm test'

section "integrations: each framework package under integrations/ (npm ci, eslint strict, tsc --strict, its tests against the real framework from npm and a real promptd)"
for dir in integrations/*/; do
	dir=${dir%/}
	[ "$dir" != integrations/testkit ] && [ -f "$dir/package.json" ] || continue
	echo "--- $dir"
	run bash -c 'cd "$1" && npm ci --no-audit --no-fund --loglevel=error && npm run lint && npm run build &&
		PROMPTD_BIN="$PROMPTD_SERVICES_DIR/promptd-ts" npm test' _ "$dir"
done

section "release: linux/amd64 artifacts from two clones of HEAD, byte for byte; the OCI image inspected and run (scripts/release-check.sh)"
release_dir=$PROMPTD_SERVICES_DIR/release
run env RELEASE_CHECK_KEEP="$release_dir" ./scripts/release-check.sh

section "packages: the release archive, Python wheel/sdist and npm tarball installed into fresh environments, each quick start run there (scripts/package-test.sh)"
run env PACKAGE_TEST_RELEASE_DIR="$release_dir" ./scripts/package-test.sh

section "deploy: pinned images, the Helm chart linted, rendered and strictly decoded, Prometheus alerts under promtool (scripts/deploy-check.sh)"
run ./scripts/deploy-check.sh

if [ -f bench/go.mod ]; then
	section "bench: go vet, its unit tests and a short benchmark run"
	run bash -c "cd bench && go vet ./... && go test -count=1 -bench . -benchtime 200x ./..."
fi

section "ok"
