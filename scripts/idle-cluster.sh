#!/usr/bin/env bash
# Idle sockets on this machine beyond what one process may hold: NODES server nodes on one
# Postgres, each loaded at the same time by its own `loadgen run --mode idle` (spectator
# sockets to tables created on that node, so none is forwarded). One process may keep at
# most `ulimit -Hn` files open (20000 here, and raising it needs CAP_SYS_RESOURCE), which
# caps a single node, and a single load generator, below 50k sockets.
#
#   cargo build --release -p server -p loadgen
#   eval "$(bash scripts/test-postgres.sh | tail -1)"        # throwaway Postgres, as root
#   psql "$TEST_DATABASE_URL" -c 'CREATE DATABASE lg_idle'    # a fresh database per run
#   bash scripts/idle-cluster.sh postgres://fib:fib@127.0.0.1:55432/lg_idle [NODES] [SOCKETS_PER_NODE] [HOLD_S]
#
# Defaults: 3 nodes × 16700 sockets (50,100 in all), held 40 s. Prints each node's idle
# report; the most sockets the nodes counted open at once (`fib_ws_connections`, read from
# every node once a second and summed: "at once" to within one such pass); and any
# WARN/ERROR line the nodes logged. Exits 1 when a load generator failed or reported a
# problem, fewer sockets than asked for were open at once, a node logged a warning or an
# error or did not stop cleanly; 2 on bad arguments or a missing tool.
set -euo pipefail

usage="usage: idle-cluster.sh POSTGRES_URL [NODES] [SOCKETS_PER_NODE] [HOLD_S]"
URL="${1:?$usage}"
NODES="${2:-3}"
PER_NODE="${3:-16700}"
HOLD="${4:-40}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SERVER="${FIB_SERVER_BIN:-$ROOT/target/release/fibonacci-cards}"
LOADGEN="${FIB_LOADGEN_BIN:-$ROOT/target/release/loadgen}"

fail() {
    echo "idle-cluster: $*" >&2
    exit 2
}
case "$URL" in
postgres://* | postgresql://*) ;;
*) fail "several nodes share one Postgres; $URL is not a postgres:// URL" ;;
esac
for n in "$NODES" "$PER_NODE" "$HOLD"; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || fail "NODES, SOCKETS_PER_NODE and HOLD_S are whole numbers above 0 ($usage)"
done
for exe in "$SERVER" "$LOADGEN"; do
    [[ -x $exe ]] || fail "$exe is missing: cargo build --release -p server -p loadgen"
done
command -v curl >/dev/null || fail "curl is missing (it reads the nodes' /metrics)"
# Each load generator holds its sockets plus a few hundred files of its own.
limit=$(ulimit -Hn)
if [[ $limit != unlimited ]] && ((PER_NODE + 300 > limit)); then
    fail "$PER_NODE sockets per node do not fit this process's open-files limit of $limit: use more nodes"
fi

WORK="$(mktemp -d /tmp/idle-cluster.XXXXXX)"
pids=()
loads=()
stop_all() {
    for p in "${loads[@]}" "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${loads[@]}" "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap stop_all EXIT
# A SIGTERM or Ctrl-C stops the nodes and the load generators too (through the EXIT trap).
trap 'exit 143' TERM INT

# The nodes: the same flags as the load generator gives the server it spawns (no abuse
# limits: every simulated client comes from one address), each its own port and node id,
# on loopback whatever the environment says.
bases=()
for k in $(seq 1 "$NODES"); do
    env -u FIB_BIND -u FIB_PORT -u FIB_ADVERTISE_URL -u FIB_NODE_ID -u DATABASE_URL \
        NO_COLOR=1 RUST_LOG=info FIB_LOG_FORMAT=text "$SERVER" \
        --bind 127.0.0.1 --port 0 --database-url "$URL" --node-id "idle-$k-$$" \
        --bot-delay-ms 0 --ws-messages-per-second 100000 --guests-per-minute 0 \
        --tables-per-minute 0 --joins-per-minute 0 --sockets-per-address 0 --sockets-per-minute 0 --connections-per-address 0 \
        --open-tables-per-player 0 \
        >"$WORK/node$k.log" 2>&1 &
    pids+=("$!")
done
for k in $(seq 1 "$NODES"); do
    address=""
    for _ in $(seq 1 600); do
        address=$(sed -n 's/.*listening on http:\/\/\([^ "]*\).*/\1/p' "$WORK/node$k.log" 2>/dev/null | head -1 || true)
        [[ -n $address ]] && break
        kill -0 "${pids[$((k - 1))]}" 2>/dev/null || break
        sleep 0.1
    done
    if [[ -z $address ]]; then
        echo "idle-cluster: node $k did not start:" >&2
        cat "$WORK/node$k.log" >&2 || true
        exit 1
    fi
    bases+=("http://$address")
    echo "node $k: pid ${pids[$((k - 1))]} at http://$address"
done

# One load generator per node, all at once: each opens its sockets, holds them HOLD_S
# seconds, closes them and opens them a second time.
for k in $(seq 1 "$NODES"); do
    "$LOADGEN" run --mode idle --url "${bases[$((k - 1))]}" --server-pid "${pids[$((k - 1))]}" \
        --sockets "$PER_NODE" --seconds "$HOLD" >"$WORK/load$k.out" 2>&1 &
    loads+=("$!")
done

# The nodes' own count of open sockets, summed, every second while the runs go on. A node
# that does not answer in time counts as 0 for that pass.
peak=0
while :; do
    running=0
    for p in "${loads[@]}"; do kill -0 "$p" 2>/dev/null && running=1; done
    [[ $running == 1 ]] || break
    total=0
    for b in "${bases[@]}"; do
        n=$({ curl -s --max-time 2 "$b/metrics" || true; } |
            awk '$1 == "fib_ws_connections" { printf "%d", $2 }')
        total=$((total + ${n:-0}))
    done
    ((total > peak)) && peak=$total
    sleep 1
done

failed=0
for k in $(seq 1 "$NODES"); do
    if ! wait "${loads[$((k - 1))]}"; then
        failed=1
    fi
    echo "--- node $k (${bases[$((k - 1))]})"
    grep -E "^(idle sockets|server RSS|server heap|per idle socket|problems|  )" "$WORK/load$k.out" ||
        cat "$WORK/load$k.out"
    # A run whose report lists a problem (sockets that would not open, unexpected closes,
    # HTTP errors) still exits 0: its report decides.
    grep -qE "^problems: +none$" "$WORK/load$k.out" || failed=1
done
loads=()

# Every node is asked to stop; each must exit 0 within 30 s.
for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
for k in $(seq 1 "$NODES"); do
    p=${pids[$((k - 1))]}
    for _ in $(seq 1 300); do
        kill -0 "$p" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$p" 2>/dev/null; then
        echo "node $k did not stop within 30 s of its SIGTERM"
        kill -KILL "$p" 2>/dev/null || true
        failed=1
    fi
    status=0
    wait "$p" || status=$?
    if ((status != 0)); then
        echo "node $k exited with status $status"
        failed=1
    fi
done
pids=()

# sqlx's notes of slow statements and slow pool hand-outs say the machine was busy (the
# nodes, the load generators and Postgres on its cores), not that anything went wrong:
# counted, not failed on.
slow_note="WARN sqlx::(query: slow statement|pool::acquire: acquired connection, but time to acquire)"
slow=$(cat "$WORK"/node*.log | awk -v re="$slow_note" '$0 ~ re { n++ } END { print n + 0 }')
trouble=$(grep -hE " (WARN|ERROR) |panicked" "$WORK"/node*.log | grep -vE "$slow_note" || true)

wanted=$((NODES * PER_NODE))
echo "--- all nodes"
echo "sockets open at once: $peak of $wanted wanted (fib_ws_connections summed over $NODES nodes, read once a second)"
if [[ -n $trouble ]]; then
    echo "node log warnings and errors:"
    echo "$trouble" | head -20
else
    echo "node logs: no warning or error"
fi
echo "sqlx's slow statement and slow connection notes (a busy machine): $slow"
echo "files: $WORK"
if ((failed)) || ((peak < wanted)) || [[ -n $trouble ]]; then
    exit 1
fi
