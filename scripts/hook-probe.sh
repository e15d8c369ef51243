#!/usr/bin/env bash
# Where the hook's time goes on a machine we cannot profile (the GPU machine's host has no
# hardware counters): the paired figure (hook_bench paired, ns added per event at DEPTH frames,
# thread CPU, measured inside each process) under variants that each remove one suspect, every
# process's figure printed, so that a per-process fast/slow state shows as two clusters.
#   scripts/hook-probe.sh DIST [ROUNDS] [DEPTH] [label=/path/to/libgmemhook.so[@VAR=value] ...]
# Variants: the hook as is; ASLR off (setarch -R: the same addresses in every process, so a
# layout-dependent state would not vary); GMEMHOOK_TSC=0 (the steady clock instead of rdtsc);
# pinned to one core; heaptrack (paired on malloc) as is, ASLR off and pinned; the empty preload;
# each extra label=hook (another build of the hook) as is. RAW=FILE: every process's line.
set -euo pipefail
DIST=$(cd "${1:?usage: scripts/hook-probe.sh DIST [ROUNDS] [DEPTH] [label=hook ...]}" && pwd)
ROUNDS=${2:-10}
DEPTH=${3:-32}
shift $(( $# < 3 ? $# : 3 ))
BENCH="$DIST/bin/hook_bench"
FAKE="$DIST/lib/fakecuda"
HEAPTRACK=$(PATH="$DIST/peers/bin:$PATH" command -v heaptrack || true)
CORE=$(( $(nproc) - 2 ))
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
hook_env() { echo "LD_LIBRARY_PATH=$FAKE LD_PRELOAD=$1 GMEMHOOK_OUT=$TMP/run GMEMHOOK_QUIET=1 GMEMHOOK_NVML=0"; }
declare -A cmd=(
  [gmemhook]="env $(hook_env "$DIST/lib/libgmemhook.so") $BENCH"
  [gmemhook-noaslr]="setarch -R env $(hook_env "$DIST/lib/libgmemhook.so") $BENCH"
  [gmemhook-tsc0]="env $(hook_env "$DIST/lib/libgmemhook.so") GMEMHOOK_TSC=0 $BENCH"
  [gmemhook-pinned]="taskset -c $CORE env $(hook_env "$DIST/lib/libgmemhook.so") $BENCH"
  [empty]="env LD_LIBRARY_PATH=$FAKE LD_PRELOAD=$DIST/lib/libgmemhook_empty_preload.so $BENCH"
)
modes=(gmemhook gmemhook-noaslr gmemhook-tsc0 gmemhook-pinned empty)
for extra in "$@"; do
  # label=hook[@VAR=value]: that build, with one more setting in its environment.
  spec=${extra#*=}
  setting=""
  [[ $spec == *@* ]] && setting=${spec#*@} spec=${spec%%@*}
  cmd[${extra%%=*}]="env $(hook_env "$spec") $setting $BENCH"
  modes+=("${extra%%=*}")
done
if [ -n "$HEAPTRACK" ]; then
  cmd[heaptrack]="env LD_LIBRARY_PATH=$FAKE $HEAPTRACK -o $TMP/ht $BENCH"
  cmd[heaptrack-noaslr]="setarch -R env LD_LIBRARY_PATH=$FAKE $HEAPTRACK -o $TMP/ht $BENCH"
  cmd[heaptrack-pinned]="taskset -c $CORE env LD_LIBRARY_PATH=$FAKE $HEAPTRACK -o $TMP/ht $BENCH"
  modes+=(heaptrack heaptrack-noaslr heaptrack-pinned)
fi
declare -A fig=()
for round in $(seq "$ROUNDS"); do
  for mode in "${modes[@]}"; do
    kind=paired
    [[ $mode == heaptrack* ]] && kind=paired-malloc
    # shellcheck disable=SC2086  # the command lines above are words on purpose
    line=$(cd "$TMP" && ${cmd[$mode]} "$DEPTH" 2000 "$kind" 40 2>/dev/null | grep " paired ") ||
      { echo "hook-probe: $mode failed" >&2; exit 1; }
    rm -rf "${TMP:?}"/run* "$TMP"/ht*
    fig[$mode]+="$(awk '{ for (i = 1; i < NF; i++) if ($i == "cpu_added_ns_per_event") print $(i + 1) }' <<<"$line") "
    # Each process's own figures in run order (RAW=file): its added cost next to the direct
    # call's time, which says whether the process as a whole ran fast or slow.
    [ -z "${RAW:-}" ] || awk -v r="$round" -v m="$mode" '{ for (i = 1; i < NF; i++) v[$i] = $(i + 1)
      printf "%s %-18s added %6.1f direct_pair %6.1f traced_pair %6.1f\n", r, m, v["cpu_added_ns_per_event"],
        v["direct_cpu_ns_per_pair"], v["traced_cpu_ns_per_pair"] }' <<<"$line" >>"$RAW"
  done
done
printf "%-20s %8s %8s %8s  %s\n" "mode (depth $DEPTH)" median min max "every process, sorted (ns added an event, thread CPU)"
for mode in "${modes[@]}"; do
  tr ' ' '\n' <<<"${fig[$mode]}" | grep . | sort -g | awk -v m="$mode" '{ v[NR] = $1; s = s sprintf(" %.1f", $1) }
    END { printf "%-20s %8.1f %8.1f %8.1f %s\n", m, v[int((NR + 1) / 2)], v[1], v[NR], s }'
done
