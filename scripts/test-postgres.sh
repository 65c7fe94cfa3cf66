#!/usr/bin/env bash
# Starts a throwaway PostgreSQL 15 for the store's tests (run as root), or reuses the one
# already listening on the port. Logs go to stderr; the last line on stdout is the URL:
#
#   eval "$(scripts/test-postgres.sh | tail -1)"
#   cargo test -p store
#
# The cluster is disposable (fsync=off, loopback only): never point anything real at it.
# FIB_PG_DIR (default /tmp/fib-pg) holds the data, socket and log; FIB_PG_PORT defaults
# to 55432. Stop it with:
#   runuser -u postgres -- /usr/lib/postgresql/15/bin/pg_ctl -D /tmp/fib-pg/data stop
set -euo pipefail

PORT="${FIB_PG_PORT:-55432}"
DIR="${FIB_PG_DIR:-/tmp/fib-pg}"
ROLE=fib
PASS=fib
DB=fib
URL="postgres://$ROLE:$PASS@127.0.0.1:$PORT/$DB"

log() { echo "test-postgres: $*" >&2; }

if [[ $(id -u) -ne 0 ]]; then
    log "must run as root (initdb and postgres run as the postgres user through runuser)"
    exit 1
fi

find_bin() {
    local d
    for d in /usr/lib/postgresql/15/bin /usr/lib/postgresql/*/bin; do
        if [[ -x $d/initdb && -x $d/pg_ctl ]]; then
            echo "$d"
            return 0
        fi
    done
    return 1
}

BIN=$(find_bin) || {
    log "PostgreSQL binaries missing: installing postgresql"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q postgresql >&2 || { apt-get update -q >&2 && apt-get install -y -q postgresql >&2; }
    BIN=$(find_bin)
}

# Several engineers' test runs may call this at once: one at a time.
mkdir -p "$DIR"
chmod 0755 "$DIR"
exec 9>"$DIR/.lock"
flock 9

pg() { runuser -u postgres -- "$@"; }
psql_admin() { pg "$BIN/psql" -h "$DIR" -p "$PORT" -U postgres -v ON_ERROR_STOP=1 -qAt "$@"; }

if pg "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT"; then
    log "reusing the server already running on port $PORT"
else
    if [[ ! -f $DIR/data/PG_VERSION ]]; then
        log "initdb in $DIR/data"
        rm -rf "$DIR/data"
        chown postgres:postgres "$DIR"
        pg "$BIN/initdb" -D "$DIR/data" -U postgres -E UTF8 --locale=C.UTF-8 \
            --auth-local=trust --auth-host=scram-sha-256 >&2
    fi
    # Left behind by a crash or SIGKILL: nothing is running (pg_isready said so).
    rm -f "$DIR/data/postmaster.pid"
    # The server must not inherit the lock (fd 9): it would hold it for its lifetime.
    chown postgres:postgres "$DIR"
    pg "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w start \
        -o "-c listen_addresses=127.0.0.1 -p $PORT -k $DIR -c fsync=off" </dev/null >&2 9>&-
fi

# Idempotent role and database, when the running server is ours (its socket is in $DIR).
if [[ -S $DIR/.s.PGSQL.$PORT ]]; then
    if [[ -z $(psql_admin -c "SELECT 1 FROM pg_roles WHERE rolname = '$ROLE'") ]]; then
        psql_admin -c "CREATE ROLE $ROLE LOGIN CREATEDB PASSWORD '$PASS'"
    fi
    if [[ -z $(psql_admin -c "SELECT 1 FROM pg_database WHERE datname = '$DB'") ]]; then
        psql_admin -c "CREATE DATABASE $DB OWNER $ROLE"
    fi
else
    log "port $PORT is served from elsewhere: assuming role $ROLE and database $DB exist"
fi

pg "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT"
log "ready on 127.0.0.1:$PORT (log: $DIR/server.log)"
echo "export TEST_DATABASE_URL=$URL"
