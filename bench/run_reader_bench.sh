#!/usr/bin/env bash
# Reading a log back, next to heaptrack_print: hook_bench records PAIRS (default
# 1000000) allocation+free pairs 32 frames deep, once as cudaMalloc+cudaFree under libgmemhook.so
# (simulated device) and once as malloc+free under heaptrack, and again with a tenth of the pairs;
# then `gmemhook summary` and heaptrack_print read each log, pinned to one core, in REPS
# (default 5) interleaved rounds of RUNS (default 5) runs in a row each, by CPU time (user +
# system: the machine may be shared; medians, and the fastest rounds). Prints events/s of both
# over the whole command (targets: gmemhook ≥ 3× heaptrack_print and ≥ 10 M events/s) and at the
# margin (the large log minus the small one: start-up and symbolization left out), and the
# gmemhook log's bytes per event (target ≤ 12). Then the large run copied to PROCS (default 8)
# processes, read with -j 1 and with every core (wall time).
# BASE=/path/to/another/gmemhook adds that binary's `summary` as one more interleaved mode on the
# same logs, its figures and its ratio to heaptrack_print printed next to this build's: a change
# is then judged against its base in the same rounds, not against another moment of the machine.
# CORE=N pins the timed commands to core N (default 0).
# Usage: [PAIRS=N] [REPS=N] [RUNS=N] [PROCS=N] [BASE=GMEMHOOK] [CORE=N] bench/run_reader_bench.sh [BUILD_DIR]
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
BASE=${BASE:-}
[ -z "$BASE" ] || [ -x "$BASE" ] || { echo "run_reader_bench: BASE=$BASE is not an executable" >&2; exit 2; }
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

# One sample: CPU seconds (user + system) of RUNS (default 5) runs in a row of command..., divided
# by RUNS, pinned to one core. getrusage counts in 10 ms steps, ±10 % of a 0.1 s command: RUNS in
# a row bring that to ±2 %.
cpu_sample() {
  /usr/bin/time -o "$TMP/time" -f '%U %S' taskset -c "${CORE:-0}" bash -c \
    'for _ in $(seq "$0"); do "$@" >/dev/null 2>&1 || exit 1; done' "${RUNS:-5}" "$@" ||
    { echo "run_reader_bench: $* failed" >&2; exit 1; }
  awk -v k="${RUNS:-5}" '{ printf "%.4f\n", ($1 + $2) / k }' "$TMP/time"
}
# Median of the values on stdin.
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# REPS rounds (default 5), each timing the four commands in turn, so that a slow spell of the
# machine falls on both readers alike; medians are printed, and the fastest rounds after them.
small=$((PAIRS / 10))
: >"$TMP/gm"; : >"$TMP/gm_small"; : >"$TMP/ht"; : >"$TMP/ht_small"
: >"$TMP/base"; : >"$TMP/base_small"
for _ in $(seq "${REPS:-5}"); do
  cpu_sample "$CLI" summary "$TMP/run.$PAIRS" >>"$TMP/gm"
  cpu_sample "$CLI" summary "$TMP/run.$small" >>"$TMP/gm_small"
  if [ -n "$BASE" ]; then
    cpu_sample "$BASE" summary "$TMP/run.$PAIRS" >>"$TMP/base"
    cpu_sample "$BASE" summary "$TMP/run.$small" >>"$TMP/base_small"
  fi
  if [ -n "$HEAPTRACK" ]; then
    cpu_sample heaptrack_print "$(ls "$TMP/ht.$PAIRS".*)" >>"$TMP/ht"
    cpu_sample heaptrack_print "$(ls "$TMP/ht.$small".*)" >>"$TMP/ht_small"
  fi
done
gm=$(median <"$TMP/gm") gm_small=$(median <"$TMP/gm_small")
gm_best=$(sort -g "$TMP/gm" | head -1)
base="" base_small="" base_best=""
if [ -n "$BASE" ]; then
  base=$(median <"$TMP/base") base_small=$(median <"$TMP/base_small")
  base_best=$(sort -g "$TMP/base" | head -1)
fi
ht="" ht_small="" ht_best=""
if [ -n "$HEAPTRACK" ]; then
  ht=$(median <"$TMP/ht") ht_small=$(median <"$TMP/ht_small")
  ht_best=$(sort -g "$TMP/ht" | head -1)
fi
bytes=$(du -sb "$TMP/run.$PAIRS" | awk '{ print $1 }')
printf "%-18s %12s %16s %22s\n" reader "cpu s" "M events/s" "M events/s at margin"
awk -v e="$(events "$PAIRS")" -v es="$(events "$small")" -v g="$gm" -v gs="$gm_small" \
    -v h="$ht" -v hs="$ht_small" -v gb="$gm_best" -v hb="$ht_best" -v b="$bytes" \
    -v r="${REPS:-5}" -v k="${RUNS:-5}" -v o="$base" -v os="$base_small" -v ob="$base_best" '
  function margin(l, s) { return l > s ? sprintf("%.2f", (e - es) / (l - s) / 1e6) : "inf" }
  BEGIN {
    printf "%-18s %12.3f %16.2f %22s\n", "gmemhook summary", g, e / g / 1e6, margin(g, gs)
    if (o != "")
      printf "%-18s %12.3f %16.2f %22s\n", "BASE summary", o, e / o / 1e6, margin(o, os)
    if (h != "") {
      printf "%-18s %12.3f %16.2f %22s\n", "heaptrack_print", h, e / h / 1e6, margin(h, hs)
      printf "gmemhook summary reads %.2fx as many events/s as heaptrack_print (whole command; " \
             "fastest rounds: %.3f vs %.3f s, %.2fx)\n", h / g, gb, hb, hb / gb
      if (o != "")
        printf "BASE summary reads %.2fx as many events/s as heaptrack_print (whole command; " \
               "fastest rounds: %.3f vs %.3f s, %.2fx)\n", h / o, ob, hb, hb / ob
    }
    if (o != "")
      printf "this build takes %.3f of BASE'"'"'s CPU time (medians; fastest rounds %.3f)\n", g / o, gb / ob
    printf "(CPU seconds a command: medians of %d interleaved rounds, each %d runs in a row)\n", r, k
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
