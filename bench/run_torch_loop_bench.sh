#!/usr/bin/env bash
# Cost of recording every PyTorch block: torch_loop_bench.py's CPU-bound training loop plain,
# under libgmemhook.so with and without NVML sampling, and with PyTorch's own
# _record_memory_history(stacks="python" / "all"), interleaved, median of REPS (default 7) runs
# each; prints a markdown table. Needs a GPU and torch; run it on the GPU machine from a build
# there or one carried to it.
# MODES=a,b,... picks the modes (torch_loop_bench.py lists them, e.g. the parts of gmemhook's cost).
# BASE_HOOK=/path/to/another/libgmemhook.so allows modes base:MODE, run under that build in the
# same rounds (e.g. MODES=plain,gmemhook-stats,base:gmemhook-stats).
# TOGETHER=CPUS (one per mode, e.g. 13,14,15) runs each round's modes at the same time, each on
# its own CPU, and adds the paired-windows table (torch_loop_bench.py --together).
# Usage: [REPS=N] [MODES=...] [BASE_HOOK=LIB] [TOGETHER=CPUS] bench/run_torch_loop_bench.sh [BUILD_DIR] [PYTHON]
set -euo pipefail
BUILD=${1:-build}
PY=${2:-python3}
HOOK="$(cd "$BUILD" && pwd)/lib/libgmemhook.so"
[ -f "$HOOK" ] || { echo "run_torch_loop_bench: no $HOOK (build first)" >&2; exit 1; }
exec "$PY" "$(dirname "$0")/torch_loop_bench.py" --compare --hook "$HOOK" --reps "${REPS:-7}" \
  ${MODES:+--modes "$MODES"} ${BASE_HOOK:+--base-hook "$BASE_HOOK"} \
  ${TOGETHER:+--together "$TOGETHER"}
