#!/usr/bin/env bash
# Several gmemhook CLIs on one synthetic run, interleaved round by round on one core, with the
# core's clock before each round: which build reads faster on this host, whatever state it is in.
#   scripts/ab-summary.sh DIST ROUNDS NAME=GMEMHOOK...   (CORE=N picks the core, default the last)
# Prints, per build, the median and fastest CPU seconds (user + system) of `summary`, and the
# rounds themselves (clock GHz, dependent adds a ns, then each build's seconds in the order given).
set -euo pipefail
DIST=${1:?usage: scripts/ab-summary.sh DIST ROUNDS NAME=GMEMHOOK...}
ROUNDS=${2:?rounds}
shift 2
CORE=${CORE:-$(( $(nproc) - 1 ))}
EVENTS=2000000
SYN=$(mktemp -d)
trap 'rm -rf "$SYN"' EXIT
taskset -c "$CORE" "$DIST/bin/analyzer_bench" --events "$EVENTS" --repeat 3 --dir "$SYN/run" --keep
names=() bins=()
for nb in "$@"; do names+=("${nb%%=*}"); bins+=("${nb#*=}"); done
source "$(dirname "$0")/summary-rounds.sh"
for _ in $(seq "$ROUNDS"); do
  line="$(core_clock) $(core_clock --adds)"
  for b in "${bins[@]}"; do
    t=$(summary_cpu "$b") || exit 1
    line+=" $t"
  done
  echo "$line" | tee -a "$SYN/rounds"
done
for i in "${!names[@]}"; do
  printf '%-10s %s\n' "${names[$i]}" "$(awk -v c=$((i + 3)) '{ print $c }' "$SYN/rounds" | rounds_stats)"
done
