#!/usr/bin/env bash
# The long fault run: every fault of internal/harness/e2e TestFaults and
# TestFaultsEtcd, ROUNDS times each (default 5), each round on a fresh
# cluster, and TestFaultsRetention for ROUNDS rounds of 45 s on one. CI runs
# one round as part of ./scripts/test.sh.
#
#   ./scripts/faults.sh            ROUNDS=5
#   ROUNDS=20 ./scripts/faults.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PROMPTD_FAULT_ROUNDS=${ROUNDS:-5}
exec ./scripts/test.sh -run '^TestFaults(Etcd|Retention)?$' -timeout 120m ./internal/harness/e2e/
