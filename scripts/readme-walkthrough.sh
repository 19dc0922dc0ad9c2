#!/usr/bin/env bash
# Pastes the docs' walkthroughs (the sh blocks marked <!-- walkthrough -->
# of docs/quickstart.md, then docs/prompts-as-code.md)
# in sequence into one bash against a fresh promptd, and compares what each
# prints with the text block after it; internal/harness/readmewalk has the
# placeholder rule. With -print it shows what each block printed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec go run ./internal/harness/readmewalk "$@" docs/quickstart.md docs/prompts-as-code.md
