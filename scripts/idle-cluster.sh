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
# report, the most sockets the nodes counted open at once (`fib_ws_connections`, summed
# over the nodes every second), and any WARN/ERROR line the nodes logged. Exits non-zero
# when a run failed, fewer sockets than asked for were open at once, or a node logged
# an error.
set -euo pipefail

URL="${1:?usage: idle-cluster.sh POSTGRES_URL [NODES] [SOCKETS_PER_NODE] [HOLD_S]}"
NODES="${2:-3}"
PER_NODE="${3:-16700}"
HOLD="${4:-40}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SERVER="${FIB_SERVER_BIN:-$ROOT/target/release/fibonacci-cards}"
LOADGEN="${FIB_LOADGEN_BIN:-$ROOT/target/release/loadgen}"
WORK="$(mktemp -d /tmp/idle-cluster.XXXXXX)"

case "$URL" in
postgres://* | postgresql://*) ;;
*)
    echo "idle-cluster: several nodes share one Postgres; $URL is not a postgres:// URL" >&2
    exit 2
    ;;
esac
for exe in "$SERVER" "$LOADGEN"; do
    [[ -x $exe ]] || {
        echo "idle-cluster: $exe is missing: cargo build --release -p server -p loadgen" >&2
        exit 2
    }
done

pids=()
loads=()
stop_all() {
    for p in "${loads[@]}" "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${loads[@]}" "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap stop_all EXIT

# The nodes: the same flags as the load generator gives the server it spawns (no abuse
# limits: every simulated client comes from one address), each its own port and node id.
bases=()
for k in $(seq 1 "$NODES"); do
    NO_COLOR=1 RUST_LOG=info FIB_LOG_FORMAT=text "$SERVER" \
        --port 0 --database-url "$URL" --node-id "idle-$k-$$" \
        --ws-messages-per-second 100000 --guests-per-minute 0 --tables-per-minute 0 \
        --joins-per-minute 0 --sockets-per-address 0 --open-tables-per-player 0 \
        >"$WORK/node$k.log" 2>&1 &
    pids+=("$!")
done
for k in $(seq 1 "$NODES"); do
    address=""
    for _ in $(seq 1 600); do
        address=$(sed -n 's/.*listening on http:\/\/\([^ "]*\).*/\1/p' "$WORK/node$k.log" | head -1)
        [[ -n $address ]] && break
        kill -0 "${pids[$((k - 1))]}" 2>/dev/null || break
        sleep 0.1
    done
    if [[ -z $address ]]; then
        echo "idle-cluster: node $k did not start:" >&2
        cat "$WORK/node$k.log" >&2
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

# The nodes' own count of open sockets, summed, every second while the runs go on.
peak=0
while :; do
    running=0
    for p in "${loads[@]}"; do kill -0 "$p" 2>/dev/null && running=1; done
    [[ $running == 1 ]] || break
    total=0
    for b in "${bases[@]}"; do
        n=$(curl -s --max-time 2 "$b/metrics" | awk '$1 == "fib_ws_connections" { printf "%d", $2 }')
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
    grep -E "^(server RSS|server heap|per idle socket|problems|  )" "$WORK/load$k.out" || cat "$WORK/load$k.out"
done
loads=()

for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
pids=()
# sqlx's notes of slow statements and slow pool hand-outs say the machine was busy (three
# nodes, three load generators and Postgres on its cores), not that anything went wrong:
# counted, not failed on.
slow=$(cat "$WORK"/node*.log |
    awk '/WARN sqlx::(query: slow statement|pool::acquire: acquired connection, but time to acquire)/ { n++ } END { print n + 0 }')
trouble=$(grep -hE " (WARN|ERROR) |panicked" "$WORK"/node*.log |
    grep -vE "WARN sqlx::(query: slow statement|pool::acquire: acquired connection, but time to acquire)" || true)

wanted=$((NODES * PER_NODE))
echo "--- all nodes"
echo "sockets open at once: $peak of $wanted wanted (fib_ws_connections summed over $NODES nodes, sampled every second)"
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
