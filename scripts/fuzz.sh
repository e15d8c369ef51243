#!/usr/bin/env bash
# Fuzzes with libFuzzer (clang, ASan+UBSan) the log reader, then run.json's reading and the name
# encoders: scripts/fuzz.sh [SECONDS] (default 30, for each target).
# CI runs it briefly; run it for 10+ minutes after touching the reader, the format, run.json or
# how names are written.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN=${1:-30}
BUILD=${GMEMHOOK_FUZZ_BUILD:-build-fuzz}
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DGMEMHOOK_FUZZ=ON -DGMEMHOOK_BUILD_TESTS=OFF -DGMEMHOOK_BUILD_SAMPLES=OFF >/dev/null
fi
cmake --build "$BUILD" --target reader_fuzz run_json_fuzz
CORPUS=$(mktemp -d)
OUTPUT=$(mktemp)
trap 'rm -rf "$CORPUS" "$OUTPUT"' EXIT
mkdir "$CORPUS/reader" "$CORPUS/run_json"
# A run.json as `gmemhook run` writes it, so the fuzzer starts from the shape it must accept.
cat >"$CORPUS/run_json/seed.json" <<'JSON'
{"command": ["python3", "train.py", "caf\udce9"], "cwd": "/w", "library": "/l/libgmemhook.so",
 "pid": 4242, "exit_code": null, "signal": 9, "signal_name": "SIGKILL",
 "start_time": "2026-01-30T14:15:03.123456Z", "end_time": null}
JSON
for target in reader run_json; do
  # On success its last lines (the final stats) are enough; on a crash the sanitizer's report and
  # the path of the crashing input are further up, so show all of it.
  if "$BUILD/bin/${target}_fuzz" -max_total_time="$SECONDS_TO_RUN" -rss_limit_mb=2048 \
      -print_final_stats=1 "$CORPUS/$target" >"$OUTPUT" 2>&1; then
    echo "fuzz: ${target}_fuzz"
    tail -5 "$OUTPUT"
  else
    status=$?
    cat "$OUTPUT"
    echo "fuzz: ${target}_fuzz failed (exit $status); the crashing input is the crash-* file named above" >&2
    exit "$status"
  fi
done
