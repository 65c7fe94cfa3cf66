#!/usr/bin/env bash
# How the server's moves per second grow with its cores (issue #30, target 3c: 2 → 8
# server cores give ≥ 3× the moves/s), on a machine with 16 cores or more: the server
# pinned to its first 2, 4 or 8 cores, the load generator on the machine's last half,
# `loadgen run --mode flat` (Trump for two, every move durable in SQLite), the
# configurations in turns so that a drift of the machine falls on all of them. Then the
# real-time core alone (`benches/core.rs`, one core against two, in turns) on two cores.
#
#   cargo build --release -p server -p loadgen
#   cargo bench -p realtime --bench core --no-run      # prints the benchmark's path
#   FIB_CORE_BENCH=target/release/deps/core-… bash scripts/cores-scaling.sh [ROUNDS] [SECONDS]
#
# FIB_SERVER_CORES (default "2 4 8") are the server's core counts, and the load generator
# gets the machine's last half; FIB_BIN_DIR (default target/release) holds `fibonacci-cards`
# and `loadgen`; FIB_SCALING_TABLES (default 256) is the table count of the rounds, and
# FIB_SCALING_ALSO (default "64 1024") those played once more with the fewest and the most
# cores after them; FIB_SCALING_LOGS (default a temporary folder) gets every run's whole report.
# Prints one line per run as it ends, then the medians. The SQLite file is in TMPDIR (the
# disk) and in /dev/shm (memory), to tell the disk's part from the process's.
set -euo pipefail

ROUNDS="${1:-2}"
SECS="${2:-6}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${FIB_BIN_DIR:-$ROOT/target/release}"
LOGS="${FIB_SCALING_LOGS:-$(mktemp -d)}"
mkdir -p "$LOGS"
COUNTS="${FIB_SERVER_CORES:-2 4 8}"
TABLES="${FIB_SCALING_TABLES:-256}"
ALSO="${FIB_SCALING_ALSO-64 1024}"
CORES=$(nproc)
FEWEST=$(echo $COUNTS | tr ' ' '\n' | sort -n | head -1)
MOST=$(echo $COUNTS | tr ' ' '\n' | sort -n | tail -1)
if [ "$CORES" -lt $((MOST * 2)) ]; then
  echo "cores-scaling.sh wants twice $MOST cores (this machine: $CORES; FIB_SERVER_CORES sets the counts)" >&2
  exit 2
fi
command -v taskset > /dev/null || { echo "taskset (util-linux) is missing" >&2; exit 2; }
LOAD_CPUS="$((CORES / 2))-$((CORES - 1))"

# loadgen starts its --server-bin as a child: this wrapper pins it first.
WRAP="$LOGS/pinned-server"
cat > "$WRAP" << EOF
#!/bin/sh
exec taskset -c "\$SERVER_CPUS" "$BIN/fibonacci-cards" "\$@"
EOF
chmod +x "$WRAP"

echo "machine: $CORES cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs);" \
  "cpu0's siblings $(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list 2> /dev/null || echo '?');" \
  "idle driver $(cat /sys/devices/system/cpu/cpuidle/current_driver 2> /dev/null || echo '?');" \
  "TMPDIR on $(df -T "${TMPDIR:-/tmp}" | awk 'NR==2 {print $2}'); load generator on cores $LOAD_CPUS"

# What a durable commit costs this disk: 200 writes of 4 KiB, each synced (O_DSYNC).
probe="${TMPDIR:-/tmp}/cores-scaling-probe-$$"
echo "the disk: $(dd if=/dev/zero of="$probe" bs=4k count=200 oflag=dsync 2>&1 | tail -1) (200 synced 4 KiB writes)"
rm -f "$probe"

RESULTS="$LOGS/results.tsv"
: > "$RESULTS"
# run LABEL SERVER_CORES TABLES TMP: one loadgen run; appends "label cores tables moves/s µs cores client".
run() {
  local label=$1 n=$2 tables=$3 tmp=$4 log
  log="$LOGS/$label-${n}c-${tables}t-$(date +%s%N).log"
  SERVER_CPUS="0-$((n - 1))" TMPDIR="$tmp" taskset -c "$LOAD_CPUS" "$BIN/loadgen" run --mode flat \
    --no-echo --tables "$tables" --seconds "$SECS" --server-bin "$WRAP" > "$log" 2>&1 || true
  local rate cpu cores client problems
  rate=$(awk '/^server actions:/ {print $3}' "$log")
  cpu=$(awk '/^server CPU:/ {print $3}' "$log")
  cores=$(awk '/^server CPU:/ {print $7}' "$log")
  client=$(awk '/^server CPU:/ {for (i = 1; i <= NF; i++) if ($i == "client") print $(i + 1)}' "$log")
  problems=$(awk -F': *' '/^problems:/ {print $2}' "$log")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$n" "$tables" "${rate:-?}" "${cpu:-?}" "${cores:-?}" "${client:-?}" >> "$RESULTS"
  echo "$label: server on $n cores, $tables tables: ${rate:-?} moves/s, ${cpu:-?} µs per move," \
    "${cores:-?} server cores used, load generator ${client:-?} cores; problems: ${problems:-? (see $log)}"
}

REVERSED=$(echo $COUNTS | tr ' ' '\n' | sort -rn | xargs)
# The fewest and the most cores (one count when there is only one).
ENDS=$FEWEST
[ "$MOST" = "$FEWEST" ] || ENDS="$FEWEST $MOST"
for round in $(seq "$ROUNDS"); do
  if [ $((round % 2)) -eq 1 ]; then order="$COUNTS"; else order="$REVERSED"; fi
  for n in $order; do run disk "$n" "$TABLES" "${TMPDIR:-/tmp}"; done
  for n in $order; do run shm "$n" "$TABLES" /dev/shm; done
done
for tables in $ALSO; do
  for n in $ENDS; do run disk "$n" "$tables" "${TMPDIR:-/tmp}"; done
done

echo
python3 - "$RESULTS" << 'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    where, cores, tables, *figures = line.rstrip("\n").split("\t")
    try:
        figures = [float(x) for x in figures]  # moves/s, µs per move, server and client cores
    except ValueError:
        continue  # a run that printed no figures (its log says why)
    runs.setdefault((where, int(tables), int(cores)), []).append(figures)
print("medians by where the database is, tables and server cores (×: against the fewest cores):")
for (where, tables, cores), v in sorted(runs.items()):
    med = [statistics.median(x[i] for x in v) for i in range(4)]
    fewest = min(c for w, t, c in runs if (w, t) == (where, tables))
    ratio = med[0] / statistics.median(x[0] for x in runs[(where, tables, fewest)])
    print(f"  {where:4} {tables:5} tables, {cores} cores: {med[0] / 1e3:6.1f}k moves/s (×{ratio:.2f}), "
          f"{med[1]:5.1f} µs per move, server {med[2]:.2f} cores used, load generator {med[3]:.2f} "
          f"({len(v)} runs)")
PY

if [ -n "${FIB_CORE_BENCH:-}" ]; then
  echo
  echo "the real-time core alone, on cores 0-1 (one core against two, in turns):"
  CORE_BENCH_CPU=3 CORE_BENCH_ROUNDS=3 taskset -c 0-1 "$FIB_CORE_BENCH" --bench "64_tables|256_tables" \
    > "$LOGS/core-bench.log" 2>&1 || true
  grep -E "wake-up handed|in turns" "$LOGS/core-bench.log" || tail -20 "$LOGS/core-bench.log"
fi
