#!/usr/bin/env bash
# Fuzzes the log reader with libFuzzer (clang, ASan+UBSan): scripts/fuzz.sh [SECONDS] (default 30).
# CI runs it briefly; run it for 10+ minutes after touching the reader or the format.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN=${1:-30}
BUILD=${GMEMHOOK_FUZZ_BUILD:-build-fuzz}
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DGMEMHOOK_FUZZ=ON -DGMEMHOOK_BUILD_TESTS=OFF -DGMEMHOOK_BUILD_SAMPLES=OFF >/dev/null
fi
cmake --build "$BUILD" --target reader_fuzz
CORPUS=$(mktemp -d)
OUTPUT=$(mktemp)
trap 'rm -rf "$CORPUS" "$OUTPUT"' EXIT
# On success its last lines (the final stats) are enough; on a crash the sanitizer's report and
# the path of the crashing input are further up, so show all of it.
if "$BUILD/bin/reader_fuzz" -max_total_time="$SECONDS_TO_RUN" -rss_limit_mb=2048 -print_final_stats=1 \
    "$CORPUS" >"$OUTPUT" 2>&1; then
  tail -5 "$OUTPUT"
else
  status=$?
  cat "$OUTPUT"
  echo "fuzz: reader_fuzz failed (exit $status); the crashing input is the crash-* file named above" >&2
  exit "$status"
fi
