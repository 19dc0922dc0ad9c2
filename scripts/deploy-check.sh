#!/usr/bin/env bash
# Checks the deployment files: the Prometheus alerts with promtool (its
# rule syntax, then the unit tests that fire and quiet each alert), then
# deploy/check's Go tests (pinned images, the compose file, the Helm chart
# linted, rendered and decoded strictly, the alerts' metric names and the
# promtool cases' dependence on their rules).
#
# promtool comes from Debian's prometheus package. When it is not on PATH,
# the package is downloaded and only its promtool unpacked into a cache
# directory: nothing is installed system-wide and no Prometheus service is
# started (DEPLOY_CHECK_FETCH_PROMTOOL=1 does so even when one is on PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
export GOFLAGS="${GOFLAGS:--buildvcs=false}"

cache="${XDG_CACHE_HOME:-$HOME/.cache}/promptd-deploy-check"
if [ "${DEPLOY_CHECK_FETCH_PROMTOOL:-}" = 1 ] || ! command -v promtool >/dev/null; then
	if [ ! -x "$cache/usr/bin/promtool" ]; then
		echo "deploy-check: fetching promtool (Debian package prometheus) into $cache"
		[ "$(id -u)" = 0 ] && apt-get update -qq
		tmp="$(mktemp -d)"
		trap 'rm -rf "$tmp"' EXIT
		(cd "$tmp" && apt-get download -qq prometheus)
		mkdir -p "$cache"
		dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/x"
		install -D -m 0755 "$tmp/x/usr/bin/promtool" "$cache/usr/bin/promtool"
	fi
	export PATH="$cache/usr/bin:$PATH"
fi
promtool --version | head -1

promtool check rules deploy/prometheus/promptd-alerts.yml
promtool test rules deploy/prometheus/promptd-alerts.test.yml

cd deploy/check
go vet ./...
DEPLOY_CHECK_PROMTOOL=required go test -count=1 ./...
