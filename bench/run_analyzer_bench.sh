#!/usr/bin/env bash
# Analyzer throughput: generates a synthetic run of 10 million events (8 threads, 1 000 distinct
# stacks, ~20 000 allocations live at a time) in a temp dir, then times the reader alone and the
# summary, leaks, peak and fragmentation reports on it (best of 3, one core), printing events/s.
# Usage: bench/run_analyzer_bench.sh [BUILD_DIR] [--events N] [--threads T] [--stacks S] ...
set -euo pipefail
BUILD=build
if [[ $# -gt 0 && $1 != --* ]]; then BUILD=$1; shift; fi
exec taskset -c 0 "$BUILD/bin/analyzer_bench" "$@"
