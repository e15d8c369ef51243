#!/usr/bin/env bash
# Reading a log back, next to heaptrack_print (issue 14): hook_bench records PAIRS (default
# 1000000) allocation+free pairs 32 frames deep, once as cudaMalloc+cudaFree under libgmemhook.so
# (simulated device) and once as malloc+free under heaptrack, and again with a tenth of the pairs;
# then `gmemhook summary` and heaptrack_print read each log, pinned to one core, best of REPS
# (default 3) by CPU time (user + system: the machine may be shared). Prints events/s of both
# over the whole command (targets: gmemhook ≥ 3× heaptrack_print and ≥ 10 M events/s) and at the
# margin (the large log minus the small one: start-up and symbolization left out), and the
# gmemhook log's bytes per event (target ≤ 12). Then the large run copied to PROCS (default 8)
# processes, read with -j 1 and with every core (wall time).
# Usage: [PAIRS=N] [REPS=N] [PROCS=N] bench/run_reader_bench.sh [BUILD_DIR]
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
BENCH="$BUILD/bin/hook_bench"
CLI="$BUILD/bin/gmemhook"
PAIRS=${PAIRS:-1000000}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# hook_bench also makes a tenth of its pairs as warm-up; every pair is two events.
events() { echo $(( 2 * ($1 + $1 / 10) )); }
HEAPTRACK=$(command -v heaptrack || true)
for size in "$PAIRS" "$((PAIRS / 10))"; do
  env LD_LIBRARY_PATH="$BUILD/lib/fakecuda" LD_PRELOAD="$BUILD/lib/libgmemhook.so" \
    GMEMHOOK_OUT="$TMP/run.$size" GMEMHOOK_QUIET=1 GMEMHOOK_NVML=0 "$BENCH" 32 "$size" sync >/dev/null
  [ -z "$HEAPTRACK" ] ||
    (cd "$TMP" && "$HEAPTRACK" -o "$TMP/ht.$size" "$BENCH" 32 "$size" malloc >/dev/null 2>&1)
done

best_cpu() {  # best user+system seconds of REPS runs of: command...
  local best="" t
  for _ in $(seq "${REPS:-3}"); do
    /usr/bin/time -o "$TMP/time" -f '%U %S' taskset -c 0 "$@" >/dev/null 2>&1
    t=$(awk '{ print $1 + $2 }' "$TMP/time")
    best=$(awk -v a="$t" -v b="$best" 'BEGIN{ if (b == "" || a < b) print a; else print b }')
  done
  echo "$best"
}

small=$((PAIRS / 10))
gm=$(best_cpu "$CLI" summary "$TMP/run.$PAIRS")
gm_small=$(best_cpu "$CLI" summary "$TMP/run.$small")
bytes=$(du -sb "$TMP/run.$PAIRS" | awk '{ print $1 }')
ht="" ht_small=""
if [ -n "$HEAPTRACK" ]; then
  ht=$(best_cpu heaptrack_print "$(ls "$TMP/ht.$PAIRS".*)")
  ht_small=$(best_cpu heaptrack_print "$(ls "$TMP/ht.$small".*)")
fi
printf "%-18s %12s %16s %22s\n" reader "cpu s" "M events/s" "M events/s at margin"
awk -v e="$(events "$PAIRS")" -v es="$(events "$small")" -v g="$gm" -v gs="$gm_small" \
    -v h="$ht" -v hs="$ht_small" -v b="$bytes" '
  function margin(l, s) { return l > s ? sprintf("%.2f", (e - es) / (l - s) / 1e6) : "inf" }
  BEGIN {
    printf "%-18s %12.3f %16.2f %22s\n", "gmemhook summary", g, e / g / 1e6, margin(g, gs)
    if (h != "") {
      printf "%-18s %12.3f %16.2f %22s\n", "heaptrack_print", h, e / h / 1e6, margin(h, hs)
      printf "gmemhook summary reads %.2fx as many events/s as heaptrack_print (whole command)\n", h / g
    }
    printf "gmemhook log: %d bytes for %d events, %.2f bytes/event (all of the run directory)\n",
           b, e, b / e }'

# -j: the same process PROCS times over (each copy a process of its own), wall time.
PROCS=${PROCS:-8}
mkdir -p "$TMP/many"
src=$(ls -d "$TMP/run.$PAIRS"/*/)
for i in $(seq "$PROCS"); do cp -r "$src" "$TMP/many/hook_bench.$i"; done
wall() { /usr/bin/time -o "$TMP/time" -f '%e' "$@" >/dev/null 2>&1; cat "$TMP/time"; }
one=$(wall "$CLI" summary "$TMP/many" -j 1)
all=$(wall "$CLI" summary "$TMP/many")
echo "$PROCS processes: -j 1 ${one} s, every core ($(nproc)) ${all} s (wall)"
