#!/usr/bin/env bash
# The flat-out load on the Colyseus 0.16 peer, then on our server, with the same shape
# (TABLES tables of 2 players, each moving as soon as it may, a SECONDS-second window),
# and one line each on stdout:
#
#   colyseus 0.16    64 tables   24.7k moves/s    37.0 µs server CPU/move     28 B avg frame
#   fibonacci-cards  64 tables   10.8k moves/s    74.0 µs server CPU/move   1494 B avg frame
#
# (Each run's context, CPU shares, latency and problems, goes to stderr.) Installs the npm
# packages (`npm ci`) when node_modules is missing and builds the release binaries
# (`cargo build --release -p server -p loadgen`, a no-op when they are current).
#
# Usage: bash bench/colyseus/compare.sh [SECONDS (10)] [TABLES (64)]
#
# BENCH_PROFILE=debug uses target/debug instead, for a smoke test where the debug build
# exists already (CI); its figures for our server mean nothing. It builds with the same
# selection as `cargo build --workspace --all-targets`, so that after that build it is a
# no-op: `-p server -p loadgen` alone unifies features differently and would compile
# axum, sqlx and the rest a second time (1-2 GB more of target/, which once filled CI's disk).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
secs=${1:-10}
tables=${2:-64}
profile=${BENCH_PROFILE:-release}
case "$profile" in
    release) build=(--release -p server -p loadgen) ;;
    debug) build=(--workspace --all-targets) ;;
    *) echo "compare.sh: BENCH_PROFILE is release or debug" >&2; exit 2 ;;
esac

if [ ! -d "$here/node_modules" ]; then
    npm ci --prefix "$here" --no-audit --no-fund >&2
fi
(cd "$root" && cargo build "${build[@]}" -q >&2)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The Colyseus server (one Node process) and its load client (another), 2 s of warm-up.
node "$here/load.mjs" --tables "$tables" --seconds "$secs" --warmup 2 --json >"$tmp/colyseus.json" \
    || { cat "$tmp/colyseus.json" >&2; echo "compare.sh: the Colyseus run failed" >&2; exit 1; }
coly=$(node "$here/summary.mjs" colyseus "$tmp/colyseus.json" 2>"$tmp/colyseus.ctx") \
    || { cat "$tmp/colyseus.ctx" >&2; exit 1; }

# Our server, spawned by our load generator (SQLite on a fresh file, no echo baseline).
(cd "$root" && "target/$profile/loadgen" run --mode flat --tables "$tables" --seconds "$secs" --no-echo --json \
    --server-bin "target/$profile/fibonacci-cards") \
    >"$tmp/ours.json" || { echo "compare.sh: the loadgen run failed" >&2; exit 1; }
ours=$(node "$here/summary.mjs" loadgen "$tmp/ours.json" 2>"$tmp/ours.ctx") \
    || { cat "$tmp/ours.ctx" >&2; exit 1; }

echo "$coly"
echo "$ours"
cat "$tmp/colyseus.ctx" "$tmp/ours.ctx" >&2
