#!/usr/bin/env bash
# Do the GPU host's cores differ? The same `gmemhook summary` of the synthetic run reads ~1.5x
# slower on that host at times (docs/performance.md, "The two machines"); the benches pin to one
# core (run_reader_bench.sh to core 0, host-bench.sh's synthetic rounds to the last). This asks:
#   1. which cores are SMT siblings inside the VM: core 0's dependent adds, alone and while
#      bench/clock_probe runs on each other core (a sibling halves them, another core does not);
#   2. whether a core is slower for its own reasons (interrupts, the host's other work): ROUNDS
#      rounds, each timing `summary` (CPU seconds) on every core named, the probe before each.
#   scripts/core-survey.sh DIST ROUNDS [CORE...]   (default cores: 0, a quarter, half, the last)
set -euo pipefail
DIST=${1:?usage: scripts/core-survey.sh DIST ROUNDS [CORE...]}
ROUNDS=${2:?rounds}
shift 2
last=$(( $(nproc) - 1 ))
cores=("$@")
[ ${#cores[@]} -gt 0 ] ||
  mapfile -t cores < <(printf '%s\n' 0 $(( (last + 1) / 4 )) $(( (last + 1) / 2 )) "$last" | sort -nu)
PROBE="$DIST/bin/clock_probe"
[ -x "$PROBE" ] || { echo "core-survey: $PROBE missing (scripts/make-dist.sh carries it)" >&2; exit 2; }

echo "== core 0's dependent adds a ns, alone and beside a probe on core k"
printf 'alone %s\n' "$(taskset -c 0 "$PROBE" --adds)"
for k in $(seq 1 "$last"); do
  taskset -c "$k" "$PROBE" --adds >/dev/null &
  other=$!
  sleep 0.02
  printf 'k=%-3s %s\n' "$k" "$(taskset -c 0 "$PROBE" --adds)"
  wait "$other"
done

echo "== every core's clock (GHz) and adds a ns, one after another"
for c in $(seq 0 "$last"); do
  printf 'core %-3s %s %s\n' "$c" "$(taskset -c "$c" "$PROBE")" "$(taskset -c "$c" "$PROBE" --adds)"
done

EVENTS=2000000
SYN=$(mktemp -d)
trap 'rm -rf "$SYN"' EXIT
"$DIST/bin/analyzer_bench" --events "$EVENTS" --repeat 1 --dir "$SYN/run" --keep >/dev/null
source "$(dirname "$0")/summary-rounds.sh"
echo "== $ROUNDS rounds: per core named, 'adds/ns summary-s' (cores ${cores[*]})"
for _ in $(seq "$ROUNDS"); do
  line=""
  for CORE in "${cores[@]}"; do
    t=$(summary_cpu "$DIST/bin/gmemhook") || exit 1
    line+=" $(core_clock --adds) $t"
    echo "$t" >>"$SYN/core.$CORE"
  done
  echo "$line"
done
for CORE in "${cores[@]}"; do
  printf 'core %-3s %s\n' "$CORE" "$(rounds_stats <"$SYN/core.$CORE")"
done
