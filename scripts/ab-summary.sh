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
for _ in $(seq "$ROUNDS"); do
  line="$(taskset -c "$CORE" "$DIST/bin/clock_probe") $(taskset -c "$CORE" "$DIST/bin/clock_probe" --adds)"
  for b in "${bins[@]}"; do
    /usr/bin/time -o "$SYN/time" -f '%U %S' taskset -c "$CORE" "$b" summary "$SYN/run" >/dev/null 2>&1
    line+=" $(awk '{ print $1 + $2 }' "$SYN/time")"
  done
  echo "$line" | tee -a "$SYN/rounds"
done
for i in "${!names[@]}"; do
  awk -v c=$((i + 3)) '{ print $c }' "$SYN/rounds" | sort -g | awk -v e="$EVENTS" -v n="${names[$i]}" \
    '{ v[NR] = $1 } END { m = v[int((NR + 1) / 2)];
       printf "%-10s median %.3f s (%.2f M events/s), fastest %.3f s (%.2f M events/s)\n", n, m, e / 1e6 / m, v[1], e / 1e6 / v[1] }'
done
