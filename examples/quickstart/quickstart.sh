#!/usr/bin/env bash
# The release archive's quick start: promptctl (from the archive) publishes a prompt
# file and points prod at it; curl resolves and assembles it with a runtime token.
#
#   PATH="$PWD/promptd_<version>_linux_amd64:$PATH" \
#   PROMPTD_URL=http://127.0.0.1:8080 PROMPTD_TOKEN=<admin> PROMPTD_RUNTIME_TOKEN=<runtime> \
#     ./quickstart.sh [AGENT]
#
# AGENT (default hello) must be new. The prompt file and promptctl's lock file are
# written to a temporary directory, removed on exit.
set -euo pipefail
agent=${1:-hello}
: "${PROMPTD_URL:=http://127.0.0.1:8080}" "${PROMPTD_TOKEN:?an admin token}" "${PROMPTD_RUNTIME_TOKEN:?a runtime token}"
export PROMPTD_URL PROMPTD_TOKEN
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

echo "\$ promptctl --version"
promptctl --version

mkdir prompts
cat >"prompts/$agent.yaml" <<YAML
agent: $agent
config:
  system: "You are {{persona}}."
  variables:
    persona: {default: helpful}
YAML
echo "\$ promptctl apply -f prompts --env prod"
promptctl apply -f prompts --env prod --message "first prompt"

echo "\$ curl .../v1/agents/$agent/envs/prod/prompt?user_id=u1"
curl -sS --fail-with-body "$PROMPTD_URL/v1/agents/$agent/envs/prod/prompt?user_id=u1" \
	-H "Authorization: Bearer $PROMPTD_RUNTIME_TOKEN"
echo "\$ curl -X POST .../v1/agents/$agent/envs/prod/assemble"
curl -sS --fail-with-body -X POST "$PROMPTD_URL/v1/agents/$agent/envs/prod/assemble" \
	-H "Authorization: Bearer $PROMPTD_RUNTIME_TOKEN" -d '{"user_id":"u1","variables":{}}'
