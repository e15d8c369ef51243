#!/usr/bin/env bash
# Where gmemhook's time goes in the torch loop (bench/torch_loop_bench.py):
# the gmemhook mode once with GMEMHOOK_STACK_STATS=1, then plain and gmemhook under `perf stat`
# (cycles, instructions, cache misses) and gmemhook under `perf record`, printing the hottest
# symbols of the process and of libgmemhook.so. Without perf (or with perf events forbidden) it
# says so and prints only the stack statistics. Each run is pinned to one CPU.
# Usage: bench/profile_torch_loop.sh [BUILD_DIR] [PYTHON] [OUT_DIR]
set -uo pipefail
BUILD=${1:-build}
PY=${2:-python3}
OUT=${3:-$(mktemp -d)}
HOOK="$(cd "$BUILD" && pwd)/lib/libgmemhook.so"
[ -f "$HOOK" ] || { echo "profile_torch_loop: no $HOOK (build first)" >&2; exit 1; }
BENCH="$(cd "$(dirname "$0")" && pwd)/torch_loop_bench.py"
CPU=$(( $(nproc) - 1 ))
STEPS=${STEPS:-600}
mkdir -p "$OUT"
one() {  # one measurement: MODE [env...] -- prefix...
  local mode=$1; shift
  env "$@" taskset -c "$CPU" "$PY" "$BENCH" --mode "$mode" --steps "$STEPS"
}
hooked=(LD_PRELOAD="$HOOK" GMEMHOOK_OUT="$OUT/logs" GMEMHOOK_QUIET=1 GMEMHOOK_NVML=0)

echo "== stack statistics (gmemhook, no NVML)"
rm -rf "$OUT/logs"; one gmemhook "${hooked[@]}" GMEMHOOK_STACK_STATS=1 2>&1 | tail -3

if ! command -v perf >/dev/null || ! perf stat -e cycles true >/dev/null 2>&1; then
  echo "== no usable perf here ($(command -v perf || echo 'not installed');" \
       "perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null))"
  exit 0
fi
for mode in plain gmemhook plain gmemhook; do
  echo "== perf stat: $mode"
  rm -rf "$OUT/logs"
  if [ "$mode" = plain ]; then set -- ; else set -- "${hooked[@]}"; fi
  env "$@" perf stat -x, -e task-clock,cycles,instructions,cache-misses,L1-dcache-load-misses \
    taskset -c "$CPU" "$PY" "$BENCH" --mode "$mode" --steps "$STEPS" 2>&1 | tail -7
done
echo "== perf record: gmemhook"
rm -rf "$OUT/logs"
env "${hooked[@]}" perf record -q -F 20000 -o "$OUT/perf.data" \
  taskset -c "$CPU" "$PY" "$BENCH" --mode gmemhook --steps "$STEPS" >/dev/null 2>&1
perf report -i "$OUT/perf.data" --no-children --sort dso --stdio 2>/dev/null | grep -v '^#' | sed '/^$/d' | head -15
echo "== hottest symbols of libgmemhook.so"
perf report -i "$OUT/perf.data" --no-children --dsos libgmemhook.so --sort sym --stdio 2>/dev/null \
  | grep -v '^#' | sed '/^$/d' | head -40
echo "== hottest symbols overall"
perf report -i "$OUT/perf.data" --no-children --sort dso,sym --stdio 2>/dev/null | grep -v '^#' \
  | sed '/^$/d' | head -30
