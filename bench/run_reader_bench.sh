#!/usr/bin/env bash
# Reading a log back, next to heaptrack_print (issue 14): hook_bench records PAIRS (default
# 1000000) allocation+free pairs 32 frames deep, once as cudaMalloc+cudaFree under libgmemhook.so
# (simulated device) and once as malloc+free under heaptrack; then `gmemhook summary` and
# heaptrack_print read their log, each pinned to one core, best of REPS (default 3) by CPU time
# (user + system: the machine may be shared). Prints events/s of both, their ratio (target:
# gmemhook ≥ 3× and ≥ 10 M events/s), and the gmemhook log's bytes per event (target ≤ 12).
# Then the same run copied to PROCS (default 8) processes, read with -j 1 and with every core.
# Usage: [PAIRS=N] [REPS=N] [PROCS=N] bench/run_reader_bench.sh [BUILD_DIR]
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
BENCH="$BUILD/bin/hook_bench"
CLI="$BUILD/bin/gmemhook"
PAIRS=${PAIRS:-1000000}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# hook_bench also makes a tenth of PAIRS as warm-up; every pair is two events.
EVENTS=$(( 2 * (PAIRS + PAIRS / 10) ))

env LD_LIBRARY_PATH="$BUILD/lib/fakecuda" LD_PRELOAD="$BUILD/lib/libgmemhook.so" \
  GMEMHOOK_OUT="$TMP/run" GMEMHOOK_QUIET=1 GMEMHOOK_NVML=0 "$BENCH" 32 "$PAIRS" sync >/dev/null
HEAPTRACK=$(command -v heaptrack || true)
[ -z "$HEAPTRACK" ] || (cd "$TMP" && "$HEAPTRACK" -o "$TMP/ht" "$BENCH" 32 "$PAIRS" malloc >/dev/null 2>&1)

best_cpu() {  # best user+system seconds of REPS runs of: command...
  local best=""
  for _ in $(seq "${REPS:-3}"); do
    local t
    t=$( { /usr/bin/time -f '%U %S' taskset -c 0 "$@" >/dev/null 2>/dev/null; } 2>&1 | tail -1 |
        awk '{ print $1 + $2 }')
    best=$(awk -v a="$t" -v b="$best" 'BEGIN{ if (b == "" || a < b) print a; else print b }')
  done
  echo "$best"
}

gm=$(best_cpu "$CLI" summary "$TMP/run")
bytes=$(du -sb "$TMP/run" | awk '{ print $1 }')
if [ -n "$HEAPTRACK" ]; then
  ht=$(best_cpu heaptrack_print "$(ls "$TMP"/ht.*)")
else
  ht=""
fi
printf "%-28s %10s %14s\n" reader "cpu s" "M events/s"
awk -v e="$EVENTS" -v g="$gm" -v h="$ht" -v b="$bytes" 'BEGIN{
  printf "%-28s %10.3f %14.2f\n", "gmemhook summary", g, e / g / 1e6
  if (h != "") printf "%-28s %10.3f %14.2f\n", "heaptrack_print", h, e / h / 1e6
  if (h != "") printf "gmemhook reads %.2fx as many events/s as heaptrack_print\n", h / g
  printf "gmemhook log: %d bytes for %d events, %.2f bytes/event (all of the run directory)\n",
         b, e, b / e }'

# -j: the same process PROCS times over (each copy a process of its own), wall time.
PROCS=${PROCS:-8}
mkdir -p "$TMP/many"
src=$(ls -d "$TMP"/run/*/)
for i in $(seq "$PROCS"); do cp -r "$src" "$TMP/many/hook_bench.$i"; done
wall() { /usr/bin/time -f '%e' "$@" 2>&1 >/dev/null | tail -1; }
one=$(wall "$CLI" summary "$TMP/many" -j 1)
all=$(wall "$CLI" summary "$TMP/many")
echo "$PROCS processes: -j 1 ${one} s, every core ($(nproc)) ${all} s (wall)"
