#!/usr/bin/env bash
# Extra cost of Python frames per allocation: python_frames_bench.py (cudaMalloc+cudaFree through
# ctypes, 20 Python frames deep) on the simulated device: unhooked, hooked with GMEMHOOK_PYTHON=0,
# hooked with GMEMHOOK_PYTHON=1; best of RUNS (default 5) interleaved runs each, a run being the
# best of 5 rounds of 100000 pairs. Frees take no stack by default, so PYTHON=1 minus PYTHON=0 per
# pair is the cost per allocation event.
# BASE_HOOK=/path/to/another/libgmemhook.so runs that build too, in the same rounds, and prints
# its row under this one's (a before/after of a change, interleaved).
# Usage: [RUNS=N] [BASE_HOOK=LIB] bench/run_python_bench.sh [BUILD_DIR] [PYTHON] [DEPTH]
set -euo pipefail
BUILD=${1:-build}
PY=${2:-python3}
DEPTH=${3:-20}
HOOK="$BUILD/lib/libgmemhook.so"
FAKE="$BUILD/lib/fakecuda"
SCRIPT="$(dirname "$0")/python_frames_bench.py"
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
one() {  # ns_per_pair of one run of: env... python bench
  local v
  v=$(env "$@" "$PY" "$SCRIPT" "$FAKE/libcudart.so.13" "$DEPTH" | awk '{print $6}')
  rm -rf "${OUT:?}"/*
  echo "$v"
}
min() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b=="" || a<b) print a; else print b }'; }
hooked=(LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$HOOK" GMEMHOOK_OUT="$OUT" GMEMHOOK_QUIET=1)
base=(LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="${BASE_HOOK:-}" GMEMHOOK_OUT="$OUT" GMEMHOOK_QUIET=1)
plain="" native="" python="" base_native="" base_python=""
# Interleaved, best of RUNS each: load from other processes hits all modes alike.
for _ in $(seq "${RUNS:-5}"); do
  plain=$(min "$(one LD_LIBRARY_PATH="$FAKE")" "$plain")
  native=$(min "$(one "${hooked[@]}" GMEMHOOK_PYTHON=0)" "$native")
  python=$(min "$(one "${hooked[@]}" GMEMHOOK_PYTHON=1)" "$python")
  if [ -n "${BASE_HOOK:-}" ]; then
    base_native=$(min "$(one "${base[@]}" GMEMHOOK_PYTHON=0)" "$base_native")
    base_python=$(min "$(one "${base[@]}" GMEMHOOK_PYTHON=1)" "$base_python")
  fi
done
echo "$("$PY" -c 'import sys; print(sys.version.split()[0])'), $DEPTH Python frames, ns per cudaMalloc+cudaFree pair:"
printf "%10s %14s %14s %14s %22s\n" hook unhooked "PYTHON=0" "PYTHON=1" "added ns/allocation"
row() { awk -v h="$1" -v p="$plain" -v n="$2" -v y="$3" \
  'BEGIN{ printf "%10s %14.1f %14.1f %14.1f %22.1f\n", h, p, n, y, y-n }'; }
row this "$native" "$python"
[ -z "${BASE_HOOK:-}" ] || row BASE_HOOK "$base_native" "$base_python"
