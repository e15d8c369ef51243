# What scripts/host-bench.sh and scripts/ab-summary.sh share to time `gmemhook summary` of the
# synthetic run on one core (sourced, not run). Needs CORE (the core), SYN (a scratch directory
# holding the run in SYN/run) and EVENTS (the run's events).

# CPU seconds (user + system) of one whole `summary` command, as a user runs it. A failed run
# returns 1: callers inside a command substitution must test it (set -e does not reach there).
summary_cpu() {
  /usr/bin/time -o "$SYN/time" -f '%U %S' taskset -c "$CORE" "$1" summary "$SYN/run" \
    >/dev/null 2>&1 || { echo "$(basename "$0"): $1 summary failed" >&2; return 1; }
  awk '{ print $1 + $2 }' "$SYN/time"
}

# The core's clock now, or with --adds its dependent adds a ns (bench/clock_probe.c); 0 when the
# dist has no probe.
core_clock() {
  [ -x "$DIST/bin/clock_probe" ] && taskset -c "$CORE" "$DIST/bin/clock_probe" "$@" || echo 0
}

# Median and fastest of the CPU seconds on stdin (spaces or lines), as M events per CPU second.
rounds_stats() {
  tr ' ' '\n' | grep . | sort -g |
    awk -v e="$EVENTS" '{ v[NR] = $1 } END { m = v[int((NR + 1) / 2)]; me = e / 1e6;
      printf "median %.3f s (%.2f M events/s), fastest %.3f s (%.2f M events/s), %d runs", m, me / m, v[1], me / v[1], NR }'
}
