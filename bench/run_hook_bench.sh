#!/usr/bin/env bash
# Hook overhead on the simulated device: cudaMalloc+cudaFree pairs at stack depths 8, 32, 64,
# unhooked vs hooked in the same run, best of 5 each. Prints ns added per event (a pair is two
# events), and what NVML sampling adds on top (issue 13: the fake libnvidia-ml.so.1, so this is
# the hook's side of it; bench/run_torch_loop_bench.sh measures the real library on a GPU).
# Usage: bench/run_hook_bench.sh [BUILD_DIR]
set -euo pipefail
BUILD=${1:-build}
BENCH="$BUILD/bin/hook_bench"
HOOK="$BUILD/lib/libgmemhook.so"
FAKE="$BUILD/lib/fakecuda"
FAKE_NVML="$BUILD/lib/fakenvml"
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
best() {  # best ns_per_pair of 5 runs of: env... hook_bench depth
  local best=""
  for _ in 1 2 3 4 5; do
    v=$(env "$@" | awk '{print $6}')
    best=$(awk -v a="$v" -v b="$best" 'BEGIN{ if (b=="" || a<b) print a; else print b }')
  done
  echo "$best"
}
printf "%-6s %12s %12s %16s %14s %10s\n" depth "plain ns/pair" "hooked ns/pair" "added ns/event" \
  "+NVML ns/pair" "NVML cost"
for d in 8 32 64; do
  plain=$(best LD_LIBRARY_PATH="$FAKE" "$BENCH" "$d")
  hooked=$(best LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$HOOK" GMEMHOOK_OUT="$OUT" GMEMHOOK_QUIET=1 \
    GMEMHOOK_NVML=0 "$BENCH" "$d")
  nvml=$(best LD_LIBRARY_PATH="$FAKE:$FAKE_NVML" LD_PRELOAD="$HOOK" GMEMHOOK_OUT="$OUT" \
    GMEMHOOK_QUIET=1 "$BENCH" "$d")
  awk -v d="$d" -v p="$plain" -v h="$hooked" -v n="$nvml" 'BEGIN{
    printf "%-6d %12.1f %12.1f %16.1f %14.1f %+9.1f%%\n", d, p, h, (h-p)/2, n, (n/h-1)*100 }'
done
# Graph launches (issue 12): each one is recorded with its stack and the graph pool's figures
# (two cuDeviceGetGraphMemAttribute calls). One event per launch.
plain=$(best LD_LIBRARY_PATH="$FAKE" "$BENCH" 32 50000 launch)
hooked=$(best LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$HOOK" GMEMHOOK_OUT="$OUT" GMEMHOOK_QUIET=1 \
  GMEMHOOK_NVML=0 "$BENCH" 32 50000 launch)
awk -v p="$plain" -v h="$hooked" 'BEGIN{
  printf "graph launch, depth 32: plain %.1f ns, hooked %.1f ns, added %.1f ns per launch\n", p, h, h-p }'
