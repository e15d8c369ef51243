#!/usr/bin/env bash
# What `gmemhook top` costs a busy job: the same job — cudaMallocAsync+cudaFreeAsync
# pairs on the simulated device under the hook, over a million events a second — timed alone and
# with `gmemhook top` following its run directory, alternately, REPS times each. Prints the job's
# own time (its timed loop) both ways, its event rate, top's CPU time (user + system) and that per
# second of the job (≤ 1.0 = keeps up on one core), and whether top's last snapshot had read
# every event.
# Usage: bench/run_top_bench.sh [BUILD_DIR] [PAIRS] [REPS]
set -euo pipefail
BUILD=${1:-build}
PAIRS=${2:-3000000}
REPS=${3:-3}
BENCH="$BUILD/bin/hook_bench"
HOOK="$BUILD/lib/libgmemhook.so"
FAKE="$BUILD/lib/fakecuda"
CLI="$BUILD/bin/gmemhook"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

job() {  # job RUN_DIR: prints the job's own ns per pair
  env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$HOOK" GMEMHOOK_OUT="$1" GMEMHOOK_QUIET=1 \
    GMEMHOOK_DEPTH=8 "$BENCH" 8 "$PAIRS" async | awk '{print $6}'
}

printf "%-5s %-6s %8s %11s %10s %14s %14s\n" rep mode "job s" "M events/s" "top cpu s" "top cpu/job s" "top read all"
for rep in $(seq 1 "$REPS"); do
  for mode in alone top; do
    run="$TMP/run.$rep.$mode"
    mkdir -p "$run"
    if [ "$mode" = top ]; then
      # Batch mode (stdout is no terminal): a snapshot a second until the job has ended.
      ( TIMEFORMAT='%U %S'; time "$CLI" top "$run" --interval 1 >"$TMP/top.out" ) 2>"$TMP/top.time" &
      top_pid=$!
      ns=$(job "$run")
      wait "$top_pid"
    else
      ns=$(job "$run")
    fi
    # The job makes PAIRS pairs plus a tenth as warm-up, two events each.
    events=$(awk -v p="$PAIRS" 'BEGIN{ printf "%d", 2 * (p + int(p / 10)) }')
    secs=$(awk -v n="$ns" -v p="$PAIRS" 'BEGIN{ printf "%.3f", n * p / 1e9 }')
    rate=$(awk -v n="$ns" 'BEGIN{ printf "%.2f", 2000 / n }')
    if [ "$mode" = top ]; then
      cpu=$(awk '{ printf "%.2f", $1 + $2 }' "$TMP/top.time")
      per=$(awk -v c="$cpu" -v s="$secs" 'BEGIN{ printf "%.2f", c / s }')
      seen=$(grep -o '[0-9]* events' "$TMP/top.out" | tail -1 | awk '{print $1}')
      all=$([ "$seen" = "$events" ] && echo yes || echo "no ($seen of $events)")
    else
      cpu="-"
      per="-"
      all="-"
    fi
    printf "%-5s %-6s %8s %11s %10s %14s %14s\n" "$rep" "$mode" "$secs" "$rate" "$cpu" "$per" "$all"
    rm -rf "$run"
  done
done
