#!/usr/bin/env bash
# Checks the deployment files: the Prometheus alerts with promtool (its
# rule syntax, then the unit tests that fire and quiet each alert), then
# deploy/check's Go tests (pinned images, the compose file, the Helm chart
# linted, rendered and decoded strictly, the alerts' metric names and the
# promtool cases' dependence on their rules).
# promtool comes from Debian's prometheus package, installed when missing
# (no service is started).
set -euo pipefail
cd "$(dirname "$0")/.."
export GOFLAGS="${GOFLAGS:--buildvcs=false}"

if ! command -v promtool >/dev/null; then
	echo "deploy-check: installing promtool (Debian package prometheus)"
	sudo=""
	[ "$(id -u)" = 0 ] || sudo="sudo"
	# policy-rc.d denies service starts during the install, if not already so.
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi

promtool check rules deploy/prometheus/promptd-alerts.yml
promtool test rules deploy/prometheus/promptd-alerts.test.yml

cd deploy/check
go vet ./...
DEPLOY_CHECK_PROMTOOL=required go test -count=1 ./...
