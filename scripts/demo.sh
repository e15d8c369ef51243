#!/usr/bin/env bash
# The main job: builds gmemhook, runs the leak sample under the hook — on the GPU when one is
# present, else on the simulated device (tests/fakecuda) — and prints its summary and leak report.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${GMEMHOOK_BUILD:-build}
RUN=$(mktemp -d "${TMPDIR:-/tmp}/gmemhook-demo.XXXXXX")
# The build's log is kept aside: the demo is the report, not compiler lines.
echo "== building gmemhook into $BUILD (log: $RUN.build.log)"
if ! scripts/build.sh >"$RUN.build.log" 2>&1; then
  tail -n 40 "$RUN.build.log"
  echo "== the build failed; the whole log is $RUN.build.log" >&2
  exit 1
fi
ENV=(LD_PRELOAD="$PWD/$BUILD/lib/libgmemhook.so" GMEMHOOK_OUT="$RUN")
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  echo "== running samples/leak on the GPU: $(nvidia-smi -L | head -1)"
else
  echo "== no GPU here: running samples/leak on the simulated device (tests/fakecuda)"
  ENV+=(LD_LIBRARY_PATH="$PWD/$BUILD/lib/fakecuda")
fi
env "${ENV[@]}" "$BUILD/bin/samples/leak"
echo "== gmemhook summary $RUN"
"$BUILD/bin/gmemhook" summary "$RUN"
echo "== gmemhook leaks $RUN"
"$BUILD/bin/gmemhook" leaks "$RUN"
