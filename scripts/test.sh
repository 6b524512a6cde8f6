#!/usr/bin/env bash
# The complete test suite: installs what it needs (Bun, dependencies, and the PostgreSQL server, Chromium and promtool (in
# the prometheus package) from Debian packages when missing), starts a throwaway PostgreSQL cluster of its own, builds the executable, runs bun test and the
# Playwright specs, and ends with one line "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD

sh scripts/bootstrap.sh || { echo "0 passed, 1 failed"; exit 1; }
export PATH="$root/.tools/node_modules/.bin:$PATH"

missing=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || missing+=(postgresql)
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
# The setup rehearsal of docs/getting-started.md (e2e/setup-trial.spec.ts runs its commands) uses curl.
command -v curl >/dev/null 2>&1 || missing+=(curl)
# promtool checks and unit-tests deploy/prometheus/alerts.yaml (e2e/deploy/prometheus.test.ts fails without it).
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing Debian packages: ${missing[*]}"
  sudo_cmd=(); [ "$(id -u)" = 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq && DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || { echo "could not install ${missing[*]}"; echo "0 passed, 1 failed"; exit 1; }
fi

# The container test (e2e/container) builds and runs the image with podman, runc and a debootstrap-made base (RECIPES 12).
# Installed only as root with apt; when they cannot be installed the test skips and prints why.
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  container_tools=()
  for tool in podman runc debootstrap; do [ -n "$(PATH="$PATH:/usr/sbin:/sbin" type -P "$tool")" ] || container_tools+=("$tool"); done
  if [ ${#container_tools[@]} -gt 0 ]; then
    echo "installing Debian packages for the container test: ${container_tools[*]}"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${container_tools[@]}" >/dev/null; } \
      || echo "could not install ${container_tools[*]}: the container test will be skipped"
  fi
fi

work=$(mktemp -d /tmp/svc-test.XXXXXX)
cleanup() { scripts/pg-cluster.sh stop "$work/pg" >/dev/null 2>&1; rm -rf "$work"; }
trap cleanup EXIT
export TEST_CONTAINER_CACHE="$work/container-cache"   # the debootstrap base image, made once per run
cluster_env=$(scripts/pg-cluster.sh start "$work/pg") || { echo "could not start the test PostgreSQL cluster"; echo "0 passed, 1 failed"; exit 1; }
eval "$cluster_env"
echo "test PostgreSQL cluster: $TEST_POSTGRES_URL"

bun run build || { echo "0 passed, 1 failed"; exit 1; }

passed=0; failed=0; status=0
# The whole project type-checks (strict), counted as one test.
if [ $# -eq 0 ]; then
  if bun x tsc --noEmit -p . > "$work/tsc.log" 2>&1; then passed=$((passed + 1)); echo "(pass) the project type-checks (tsc --noEmit, strict)";
  else failed=$((failed + 1)); status=1; cat "$work/tsc.log"; echo "(fail) the project type-checks (tsc --noEmit, strict)"; fi
fi
log="$work/bun-test.log"
bun test "$@" 2>&1 | tee "$log"; rc=${PIPESTATUS[0]}
p=$(grep -Eo '^ *[0-9]+ pass$' "$log" | tail -1 | tr -dc 0-9); f=$(grep -Eo '^ *[0-9]+ fail$' "$log" | tail -1 | tr -dc 0-9)
passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0}))
if [ "$rc" -ne 0 ]; then status=1; [ "${f:-0}" = 0 ] && failed=$((failed + 1)); fi

if [ $# -eq 0 ] && ls e2e/*.spec.ts >/dev/null 2>&1; then
  log="$work/playwright.log"
  node node_modules/@playwright/test/cli.js test --config e2e/playwright.config.ts 2>&1 | tee "$log"; rc=${PIPESTATUS[0]}
  p=$(grep -Eo '^ *[0-9]+ passed' "$log" | tail -1 | tr -dc 0-9); f=$(grep -Eo '^ *[0-9]+ failed' "$log" | tail -1 | tr -dc 0-9)
  passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0}))
  if [ "$rc" -ne 0 ]; then status=1; [ "${f:-0}" = 0 ] && failed=$((failed + 1)); fi
fi

echo "$passed passed, $failed failed"
exit "$status"
