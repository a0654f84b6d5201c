#!/usr/bin/env bash
# A private PostgreSQL cluster on loopback for the tests of store/pgstore.
#
#   scripts/pg-test-cluster.sh start   # create (once) and start it; prints the test URL
#   scripts/pg-test-cluster.sh env     # prints `export OBVERSA_TEST_POSTGRES=…` (eval it)
#   scripts/pg-test-cluster.sh stop    # stop it (the data directory is kept)
#   scripts/pg-test-cluster.sh destroy # stop it and remove its data directory
#
# The cluster lives in OBVERSA_PG_DIR (default /tmp/obversa-pg-test), listens
# on 127.0.0.1:OBVERSA_PG_PORT (default 55433) only, and has one role,
# obversa, owning one database, obversa_test. The role logs in with a
# password (scram-sha-256) kept in a password file beside the cluster, so the
# URL carries no password: the tests read it through passfile=, as a user's
# deployment would. PostgreSQL refuses to run as root, so as root the
# server runs as the postgres user (Debian's package creates it). Durability
# is PostgreSQL's default (fsync, synchronous_commit and full_page_writes on).
#
# Needs Debian's postgresql package (apt-get install -y postgresql); `start`
# installs it when run as root and it is missing.
set -euo pipefail

DIR=${OBVERSA_PG_DIR:-/tmp/obversa-pg-test}
PORT=${OBVERSA_PG_PORT:-55433}
DATA=$DIR/data
SOCK=$DIR/sock
LOG=$DIR/server.log
PASSFILE=$DIR/pgpass
DB=obversa_test
ROLE=obversa

pgbin() {
  local v
  for v in 17 16 15 14 13; do
    if [ -x "/usr/lib/postgresql/$v/bin/postgres" ]; then
      echo "/usr/lib/postgresql/$v/bin"
      return
    fi
  done
  local p
  p=$(command -v pg_ctl 2>/dev/null) && dirname "$(readlink -f "$p")" && return
  return 1
}

install_pg() {
  if pgbin >/dev/null; then return; fi
  if [ "$(id -u)" != 0 ]; then
    echo "pg-test-cluster: PostgreSQL is not installed; run: sudo apt-get install -y postgresql" >&2
    exit 1
  fi
  echo "pg-test-cluster: installing postgresql (Debian packages)" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq postgresql >/dev/null
}

# as runs a command as the cluster's owner: postgres when we are root.
as() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

owner() {
  if [ "$(id -u)" = 0 ]; then echo postgres; else id -un; fi
}

url() {
  echo "postgres://$ROLE@127.0.0.1:$PORT/$DB?sslmode=disable&passfile=$PASSFILE"
}

running() {
  [ -f "$DATA/postmaster.pid" ] && as "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1
}

start() {
  install_pg
  BIN=$(pgbin)
  local o
  o=$(owner)
  if [ ! -f "$DATA/PG_VERSION" ]; then
    rm -rf "$DATA" "$SOCK"
    install -d -m 755 "$DIR"
    install -d -o "$o" -m 700 "$DATA"
    local pw pwfile
    pw=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
    pwfile=$(mktemp)
    # initdb's superuser gets the same password; nothing else knows it.
    printf '%s\n' "$pw" >"$pwfile"
    chown "$o" "$pwfile"
    as "$BIN/initdb" -D "$DATA" -U postgres --pwfile="$pwfile" \
      --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C >/dev/null
    rm -f "$pwfile"
    cat >>"$DATA/postgresql.conf" <<CONF

# obversa test cluster: loopback only; durability left at the defaults.
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '$SOCK'
max_connections = 200
CONF
    umask 077
    printf '127.0.0.1:%s:*:%s:%s\n' "$PORT" "$ROLE" "$pw" >"$PASSFILE"
    chmod 600 "$PASSFILE"
    umask 022
    echo "$pw" >"$DIR/.role-password"
    chmod 600 "$DIR/.role-password"
  fi
  install -d -o "$o" -m 700 "$SOCK"
  if ! running; then
    touch "$LOG"
    chown "$o" "$LOG"
    as "$BIN/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 -o "-p $PORT" start >/dev/null
  fi
  # The role's password waits beside the cluster until the role and its
  # database exist: a start interrupted after initdb finishes them next time.
  if [ -f "$DIR/.role-password" ]; then
    local pw
    pw=$(cat "$DIR/.role-password")
    as "$BIN/psql" -X -q -h "$SOCK" -p "$PORT" -U postgres -d postgres \
      -c "CREATE ROLE $ROLE LOGIN PASSWORD '$pw'" \
      -c "CREATE DATABASE $DB OWNER $ROLE"
    rm -f "$DIR/.role-password"
  fi
  url
}

stop() {
  BIN=$(pgbin) || exit 0
  if running; then
    as "$BIN/pg_ctl" -D "$DATA" -m fast -w -t 60 stop >/dev/null
  fi
}

case "${1:-}" in
start) start ;;
env)
  echo "export OBVERSA_TEST_POSTGRES='$(url)'"
  ;;
stop) stop ;;
destroy)
  stop
  rm -rf "$DIR"
  ;;
*)
  echo "usage: $0 start|env|stop|destroy" >&2
  exit 2
  ;;
esac
