#!/usr/bin/env bash
# 2000 short-lived threads (8 alive at a time), one cudaMalloc+cudaFree each,
# on the simulated device: plain vs hooked wall time, best of 3 each, and the log's size on disk.
# The target is hooked ≤ 3× plain and ≤ 64 MiB of logs. Usage: bench/run_short_threads_bench.sh [BUILD_DIR]
set -euo pipefail
BUILD=${1:-build}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
SCENARIO="$BUILD/bin/gmemhook_scenario" FAKE="$BUILD/lib/fakecuda"
best() {  # best wall seconds of 3 runs of: env... scenario short-threads 2000 8
  local best=""
  for _ in 1 2 3; do
    local t0 t1
    t0=$(date +%s.%N)
    env "$@" "$SCENARIO" short-threads 2000 8 >/dev/null
    t1=$(date +%s.%N)
    best=$(awk -v a="$t1" -v b="$t0" -v c="$best" 'BEGIN{ d=a-b; if (c=="" || d<c) print d; else print c }')
  done
  echo "$best"
}
plain=$(best LD_LIBRARY_PATH="$FAKE")
hooked=$(best LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$BUILD/lib/libgmemhook.so" GMEMHOOK_OUT="$OUT" GMEMHOOK_QUIET=1)
logs=$(du -sk "$(ls -d "$OUT"/*/ | head -1)" | awk '{print $1}')
awk -v p="$plain" -v h="$hooked" -v k="$logs" 'BEGIN{
  printf "2000 short-lived threads: plain %.2f s, hooked %.2f s (%.1f×), one run'"'"'s logs %.1f MiB\n",
         p, h, h/p, k/1024 }'
