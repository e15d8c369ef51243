#!/usr/bin/env bash
# Instructions the hook adds per cudaMalloc+cudaFree pair, by callgrind (deterministic: the way
# to compare two builds on a shared machine). hook_bench (or BENCH=hook_bench_nofp, the loop
# without frame pointers) runs plain and under each hook at two pair counts; the difference
# leaves start-up and exit out: (hooked(N2) - hooked(N1) - plain(N2) + plain(N1)) / (1.1 (N2 - N1)):
# hook_bench runs a tenth more pairs as warm-up, hence the 1.1.
# Every run reads a clock that moves 40 ns a reading (bench/steady_clock_preload.c), so that each
# event's time delta, and with it the count, is the same from run to run (STEADY_CLOCK=0: the
# real clock, whose uneven pace under callgrind moved two runs of one build by ±20 a pair).
# CACHE=1 adds callgrind's cache simulation and prints the data reads that missed the first
# level and the last level per pair too (LL set by LL=size,assoc,line, default 2 MiB: with
# evict_kb above it, the hook's tables come from memory on every event, as between two PyTorch
# tensor events). Event times from clock_gettime (GMEMHOOK_TSC=0), as in docs/performance.md.
# ASLR is off (setarch -R): the recent walks' sets are chosen by stack addresses, and with many
# paths one run may crowd a set that the next does not.
# MODE paired (cuMemAlloc_v2+cuMemFree_v2, hook_bench's paired mode with one window a side): the
# direct windows cost the same with or without the hook, so they drop out of the difference, and
# the traced pairs are the warm-up window and the timed one: divisor 2 (N2 - N1). What the paired
# table of run_hook_bench.sh times, in instructions (the "plain" figure then counts two pairs, a
# traced and a direct one).
# Usage: [BENCH=hook_bench_nofp] [BASE_HOOK=LIB] [CACHE=1] [STEADY_CLOCK=0] [N1=2000] [N2=6000]
#        bench/callgrind_hook_bench.sh [BUILD_DIR] [DEPTH] [MODE] [PATHS] [EVICT_KB]
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
DEPTH=${2:-32}
MODE=${3:-sync}
PATHS=${4:-1}
EVICT=${5:-0}
BENCH_BIN="$BUILD/bin/${BENCH:-hook_bench}"
FAKE="$BUILD/lib/fakecuda"
N1=${N1:-2000}
N2=${N2:-6000}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
sim=()
clock=""
[ "${STEADY_CLOCK:-1}" = 0 ] || clock="$BUILD/lib/libgmemhook_steady_clock.so"
[ -z "${CACHE:-}" ] || sim=(--cache-sim=yes "--LL=${LL:-2097152,16,64}")

# "Ir D1mr DLmr" totals of one run of: [hook] pairs.
totals() {
  local hook=$1 pairs=$2 f="$OUT/cg.out"
  local preload=$clock${hook:+${clock:+:}$hook}
  env LD_LIBRARY_PATH="$FAKE" ${preload:+LD_PRELOAD=$preload} GMEMHOOK_OUT="$OUT/run" GMEMHOOK_QUIET=1 \
    GMEMHOOK_NVML=0 GMEMHOOK_TSC=0 setarch "$(uname -m)" -R valgrind --tool=callgrind "${sim[@]}" --callgrind-out-file="$f" \
    "$BENCH_BIN" "$DEPTH" "$pairs" "$MODE" "$PATHS" "$EVICT" >/dev/null 2>&1
  awk '/^events:/ { for (i = 2; i <= NF; i++) col[$i] = i - 1 }
       /^(summary|totals):/ { ir = $(col["Ir"] + 1)
         d1 = ("D1mr" in col) ? $(col["D1mr"] + 1) : 0; dl = ("DLmr" in col) ? $(col["DLmr"] + 1) : 0 }
       END { print ir, d1, dl }' "$f"
  rm -rf "${OUT:?}"/*
}
# Per pair between the two counts: "Ir D1mr DLmr".
per_pair() {
  local a b
  a=$(totals "$1" "$N1")
  b=$(totals "$1" "$N2")
  local n=$(((N2 - N1) * 11 / 10))
  [[ $MODE != paired* ]] || n=$((2 * (N2 - N1)))
  awk -v a="$a" -v b="$b" -v n="$n" 'BEGIN { split(a, x); split(b, y)
    printf "%.1f %.2f %.2f\n", (y[1] - x[1]) / n, (y[2] - x[2]) / n, (y[3] - x[3]) / n }'
}

plain=$(per_pair "")
echo "$(basename "$BENCH_BIN") depth $DEPTH $MODE paths $PATHS evict_kb $EVICT; per pair (plain: $plain):"
printf "%-10s %14s %12s %12s\n" hook "added Ir" "added D1mr" "added DLmr"
report() {
  awk -v p="$plain" -v h="$2" -v name="$1" 'BEGIN { split(p, x); split(h, y)
    printf "%-10s %14.1f %12.2f %12.2f\n", name, y[1] - x[1], y[2] - x[2], y[3] - x[3] }'
}
report this "$(per_pair "$BUILD/lib/libgmemhook.so")"
[ -z "${BASE_HOOK:-}" ] || report BASE_HOOK "$(per_pair "$BASE_HOOK")"
