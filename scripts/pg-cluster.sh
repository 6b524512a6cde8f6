#!/usr/bin/env bash
# Throwaway PostgreSQL cluster for the test suite, on 127.0.0.1 with TLS (a CA made here) and trust auth for loopback.
#   scripts/pg-cluster.sh start DIR   -> prints shell exports: TEST_POSTGRES_URL, TEST_POSTGRES_CA, TEST_POSTGRES_DIR
#   scripts/pg-cluster.sh stop DIR
#   scripts/pg-cluster.sh down DIR / up DIR   -> stops the server (fast shutdown) / starts it again, keeping the cluster
set -euo pipefail
cmd=${1:?start|stop|down|up}; dir=${2:?cluster directory}

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
[ -n "$bindir" ] || bindir=$(dirname "$(command -v initdb)")
as_owner() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

case "$cmd" in
start)
  mkdir -p "$dir"
  if [ "$(id -u)" = 0 ]; then chmod 755 "$(dirname "$dir")"; chown postgres: "$dir"; fi
  as_owner "$bindir/initdb" -D "$dir/data" -U postgres -A trust --no-sync -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; exit 1; }
  # TLS material: a private CA and a server certificate for localhost / 127.0.0.1 (lets tests prove verify-full works).
  (
    cd "$dir"
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=test-ca" -keyout ca.key -out ca.pem >/dev/null 2>&1
    openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout server.key -out server.csr >/dev/null 2>&1
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > san.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile san.ext -out server.crt >/dev/null 2>&1
    chmod 600 server.key; chmod 644 ca.pem
    [ "$(id -u)" = 0 ] && chown postgres: server.key server.crt
  )
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
  cat >> "$dir/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
ssl = on
ssl_cert_file = '$dir/server.crt'
ssl_key_file = '$dir/server.key'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 200
CONF
  as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null \
    || { cat "$dir/server.log" >&2; exit 1; }
  echo "export TEST_POSTGRES_URL=postgresql://postgres@127.0.0.1:$port/postgres"
  echo "export TEST_POSTGRES_CA=$dir/ca.pem"
  echo "export TEST_POSTGRES_DIR=$dir"
  echo "export TEST_POSTGRES_BIN=$bindir"
  ;;
down)
  as_owner "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
  ;;
up)
  as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null \
    || { cat "$dir/server.log" >&2; exit 1; }
  ;;
stop)
  if [ -f "$dir/data/postmaster.pid" ]; then as_owner "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true; fi
  rm -rf "$dir"
  ;;
*) echo "usage: $0 start|stop|down|up DIR" >&2; exit 2 ;;
esac
