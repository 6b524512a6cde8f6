#!/usr/bin/env bash
# Runs the benchmarks with a throwaway PostgreSQL cluster: scripts/bench.sh [name-filter]
set -euo pipefail
cd "$(dirname "$0")/.."
sh scripts/bootstrap.sh
export PATH="$PWD/.tools/node_modules/.bin:$PATH"
work=$(mktemp -d /tmp/svc-bench.XXXXXX)
trap 'scripts/pg-cluster.sh stop "$work/pg" >/dev/null 2>&1; rm -rf "$work"' EXIT
eval "$(scripts/pg-cluster.sh start "$work/pg")"
bun run build >/dev/null
bun e2e/bench/run.ts "$@"
