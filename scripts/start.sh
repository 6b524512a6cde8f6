#!/bin/sh
# Builds the executable and runs the service on the embedded database (./service.db unless SERVICE_DATABASE_URL says otherwise).
set -eu
cd "$(dirname "$0")/.."
PATH="$PWD/.tools/node_modules/.bin:$PATH"
bun run build
./dist/service database migrate
exec ./dist/service serve
