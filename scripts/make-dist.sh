#!/usr/bin/env bash
# Copies what a GPU machine needs from a build into dist/ (small enough to carry): the hook, the
# CLI and the samples. Usage: scripts/make-dist.sh [BUILD_DIR] [DIST_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
DIST=${2:-dist}
rm -rf "$DIST"
mkdir -p "$DIST/bin/samples" "$DIST/lib"
cp "$BUILD/lib/libgmemhook.so" "$DIST/lib/"
cp "$BUILD/bin/gmemhook" "$DIST/bin/"
[ -f "$BUILD/bin/hook_bench" ] && cp "$BUILD/bin/hook_bench" "$DIST/bin/"
# The same loop without frame pointers (libtorch's frames; bench/callgrind_hook_bench.sh).
[ -f "$BUILD/bin/hook_bench_nofp" ] && cp "$BUILD/bin/hook_bench_nofp" "$DIST/bin/"
# The torch loop benchmark's control: a preload that does nothing.
[ -f "$BUILD/lib/libgmemhook_empty_preload.so" ] && cp "$BUILD/lib/libgmemhook_empty_preload.so" "$DIST/lib/"
# The gpu-labelled tests: the recorder's entry-point tests, run against the real libraries.
cp "$BUILD/bin/recorder_tests" "$BUILD/bin/gmemhook_scenario" "$DIST/bin/"
cp "$BUILD"/bin/samples/* "$DIST/bin/samples/"
# The CUPTI oracle of gpu-check's `cupti` rows, when the build has it (-DGMEMHOOK_CUPTI_ORACLE=ON).
[ -f "$BUILD/lib/libgmemhook_cupti_oracle.so" ] && cp "$BUILD/lib/libgmemhook_cupti_oracle.so" "$DIST/lib/"
mkdir -p "$DIST/lib/fakecuda" && cp -P "$BUILD"/lib/fakecuda/*.so* "$DIST/lib/fakecuda/"  # python bench
# scripts/host-bench.sh: the simulated device's NVML, the analyzer's benchmark, and heaptrack (the
# peer the hook and reader are measured against) with the libraries a GPU machine lacks.
mkdir -p "$DIST/lib/fakenvml" && cp -P "$BUILD"/lib/fakenvml/*.so* "$DIST/lib/fakenvml/"
[ -f "$BUILD/bin/analyzer_bench" ] && cp "$BUILD/bin/analyzer_bench" "$DIST/bin/" &&
  strip --strip-debug "$DIST/bin/analyzer_bench"
[ -f "$BUILD/bin/clock_probe" ] && cp "$BUILD/bin/clock_probe" "$DIST/bin/"
scripts/pack-heaptrack.sh "$DIST/peers" || echo "make-dist: heaptrack not packed (not installed here?)" >&2
strip --strip-debug "$DIST/bin/gmemhook"
du -sh "$DIST"
