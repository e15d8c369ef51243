#!/usr/bin/env bash
# What a stack capture with Python frames costs inside the process, by the hook's own timing
# (GMEMHOOK_STACK_STATS=1: ns per capture, Python walk and native walk apart): python_frames_bench.py
# on the simulated device, DEPTH (default 20) Python frames deep, RUNS (default 11) interleaved
# runs, medians and lowest. EVICT_KB=N copies N KiB after each pair, so that the walks read the
# frames from further caches, as between two PyTorch tensor events (the copy dominates the pair's
# time, which is why this reads the hook's own timing rather than the loop's). BASE_HOOK=LIB runs
# another build in the same rounds.
# Usage: [RUNS=N] [PAIRS=N] [EVICT_KB=N] [BASE_HOOK=LIB] bench/run_python_stats_bench.sh
#        [BUILD_DIR] [PYTHON] [DEPTH]
set -euo pipefail
BUILD=${1:-build}
PY=${2:-python3}
DEPTH=${3:-20}
FAKE="$BUILD/lib/fakecuda"
SCRIPT="$(dirname "$0")/python_frames_bench.py"
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
hooks=("$BUILD/lib/libgmemhook.so")
[ -z "${BASE_HOOK:-}" ] || hooks+=("$BASE_HOOK")
for _ in $(seq "${RUNS:-11}"); do
  for i in "${!hooks[@]}"; do
    stats=$(LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="${hooks[$i]}" GMEMHOOK_OUT="$OUT" GMEMHOOK_QUIET=1 \
      GMEMHOOK_STACK_STATS=1 "$PY" "$SCRIPT" "$FAKE/libcudart.so.13" "$DEPTH" "${PAIRS:-20000}" \
      "${EVICT_KB:-0}" 2>&1 >/dev/null | grep "stack stats:")
    rm -rf "${OUT:?}"/*
    # "... native 157 ns and 7 frames each ...; python 236 ns and 21 frames each; ..."
    echo "$i $(sed -E 's/.*native ([0-9]+) ns and ([0-9]+) frames.*python ([0-9]+) ns and ([0-9]+) frames.*/\1 \2 \3 \4/' <<<"$stats")"
  done
done | awk -v base="${BASE_HOOK:-}" '
  { n[$1]++; py[$1, n[$1]] = $4; nat[$1, n[$1]] = $2; pyf[$1] = $5; natf[$1] = $3 }
  function med(a, k, m,   i, j, t, v) {  # median of a[k, 1..m] (insertion sort: any awk)
    for (i = 1; i <= m; i++) {
      t = a[k, i] + 0
      for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]
      v[j + 1] = t
    }
    return v[int((m + 1) / 2)]
  }
  function low(a, k, m,   i, l) {
    l = a[k, 1] + 0
    for (i = 2; i <= m; i++) if (a[k, i] + 0 < l) l = a[k, i] + 0
    return l
  }
  END {
    printf "%-10s %24s %24s\n", "hook", "python ns (median, low)", "native ns (median, low)"
    for (k = 0; k in n; k++)
      printf "%-10s %15d %8d %15d %8d   (%d Python, %d native frames)\n", k == 0 ? "this" : "BASE_HOOK",
        med(py, k, n[k]), low(py, k, n[k]), med(nat, k, n[k]), low(nat, k, n[k]), pyf[k], natf[k]
  }'
echo "(GMEMHOOK_STACK_STATS=1 per capture, python_frames_bench.py depth $DEPTH, ${PAIRS:-20000} pairs," \
  "EVICT_KB=${EVICT_KB:-0}, ${RUNS:-11} interleaved runs)"
