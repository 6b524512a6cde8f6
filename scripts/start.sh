#!/bin/sh
# Builds the executable and runs the demo: the service on a fresh embedded database against the built-in forge simulator.
set -eu
cd "$(dirname "$0")/.."
PATH="$PWD/.tools/node_modules/.bin:$PATH"
bun run build
exec ./dist/service demo
