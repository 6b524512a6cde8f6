#!/bin/sh
# Installs the pinned Bun from the npm registry into .tools/ (no global change) and the locked dependencies.
# Needs only Node.js and npm. Idempotent: does nothing that is already done.
set -eu
cd "$(dirname "$0")/.."
BUN_VERSION=1.4.4
BUN="$PWD/.tools/node_modules/.bin/bun"
if [ ! -x "$BUN" ] || [ "$("$BUN" --version 2>/dev/null)" != "$BUN_VERSION" ]; then
  echo "installing bun $BUN_VERSION from the npm registry into .tools/"
  npm install --prefix .tools --no-save --no-package-lock --no-audit --no-fund --loglevel=error "bun@$BUN_VERSION"
fi
"$BUN" install --frozen-lockfile --silent
