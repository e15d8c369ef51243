#!/usr/bin/env bash
# scripts/gpu-check.sh in parts, for GPU machines whose commands have a time limit: runs each SET
# (a comma-separated list of gpu-check groups) as its own check until SECONDS have passed, so a
# slow part costs only its own rows. Each set's summary lands in OUT/NAME.tgz (NAME: the set with
# commas as '_'); here, `scripts/verification.py DIR` on each unpacked archive writes the tables.
#   scripts/gpu-check-sets.sh BUILD_DIR OUT_DIR SECONDS SET...
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=$1 OUT=$2 BUDGET=$3
shift 3
WORK=${GMEMHOOK_CHECK_WORK:-/tmp/gpu-check-sets}
mkdir -p "$OUT" "$WORK"
start=$SECONDS status=0
for set in "$@"; do
  left=$((BUDGET - (SECONDS - start)))
  name=${set//,/_}
  if [ "$left" -lt 60 ]; then
    echo "gpu-check-sets: not run for lack of time: $set" | tee -a "$OUT/not-run.txt"
    continue
  fi
  echo "== $set (${left}s left)"
  # The runs stay in WORK (large); only the summary archive goes to OUT.
  timeout "$left" scripts/gpu-check.sh "$BUILD" "$WORK/$name" --only "$set" || status=1
  cp "$WORK/$name.tgz" "$OUT/" 2>/dev/null || echo "gpu-check-sets: no summary for $set" >&2
done
exit $status
